"""Clonetalk: speaks text in the voice of a reference clip."""

from tensorrt_model_connect.model_support import FamilySupport


def describe(metadata):
    required_files = {"clonetalk.yaml", "lm.pt", "speech_tokenizer.onnx", "vocoder.pt"}
    if required_files.issubset(metadata.files):
        return FamilySupport(tasks=("audio_generation",), default_task="audio_generation", default_precision="fp32")
    return None
