"""Lyra: which Tasks a checkpoint's bundle can carry."""

from tensorrt_model_connect.model_support import family_support

_older = family_support(model_types=("lyra", "lyra3"), tasks=("text_generation",), default_task="text_generation")


def describe(metadata):
    if metadata.config.get("model_type") != "lyra4":
        return _older(metadata)
    tasks = ["text_generation"]
    hears = isinstance(metadata.config.get("audio_config"), dict)
    if hears:
        tasks.append("audio_text_to_text")
    return family_support(model_types=("lyra4",), tasks=tuple(tasks), default_task=tasks[-1])(metadata)
