"""Tunesmith: songs from a description and lyrics."""

from tensorrt_model_connect.model_support import family_support

describe = family_support(model_types=("tunesmith",), tasks=("audio_generation",), default_task="audio_generation")
