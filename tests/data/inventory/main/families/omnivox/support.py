"""Omnivox: served as its text thinker."""

from tensorrt_model_connect.model_support import family_support

describe = family_support(
    model_types=("omnivox",),
    tasks=("text_generation",),
    default_task="text_generation",
)
