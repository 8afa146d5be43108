"""Loner: a text model with no manifest yet."""

from tensorrt_model_connect.model_support import family_support

describe = family_support(model_types=("loner",), tasks=("text_generation",), default_task="text_generation")
