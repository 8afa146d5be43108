"""Reelgen: short videos with their soundtrack."""

from tensorrt_model_connect.model_support import family_support

describe = family_support(model_types=("reelgen",), tasks=("text_to_audio_video",), default_task="text_to_audio_video",
                          default_precision="bf16")
