"""Prism: images and text."""

from tensorrt_model_connect.model_support import family_support

describe = family_support(model_types=("prism",), tasks=("images_text_to_text", "text_generation"),
                          default_task="images_text_to_text")
