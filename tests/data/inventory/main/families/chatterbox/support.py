"""Chatterbox: a spoken session, speech in and speech out."""

from tensorrt_model_connect.model_support import family_support

describe = family_support(model_types=("chatterbox",), tasks=("speech_session",), default_task="speech_session")
