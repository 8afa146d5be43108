"""TRTMC's Task names that take or make audio, each with its capability class; a name not listed that
speaks of audio is flagged for a person, never guessed. Pure.
"""

from __future__ import annotations

import re

__all__ = ["AUDIO_TASKS", "TAKES_AUDIO", "task_class", "speaks_of_audio", "interface_task"]

# Task name -> capability class. Grouped by what the Task takes and gives.
# The list covers every audio Task name in TRTMC's Task SDK, families' `support.py` files, manifests and the owners'
# qualification Tasks, in both layouts (older names such as `speech_to_text` and newer ones such as `transcription`,
# `speech_session`, `image_audio_to_text`). A Task that is not listed and whose name has no audio word is not an audio
# Task and is left to the manifest's other fields.
AUDIO_TASKS: dict[str, str] = {
    # Ordered text and audio parts (and images or video) -> text: audio question answering. The speech
    # response Task answers in text and speech; its text answer is what this workload judges.
    "audio_text_to_text": "audio-qa",
    "image_audio_text_to_text": "audio-qa",
    "audio_video_text_to_text": "audio-qa",
    "image_audio_to_text": "audio-qa",
    "image_audio_text_to_text_speech_response": "audio-qa",
    "audio_text_conversation": "audio-qa",
    "image_audio_text_conversation": "audio-qa",
    "batch_audio_text_conversation": "audio-qa",
    "batch_image_audio_text_conversation": "audio-qa",
    "batch_text_images_audio_conversations": "audio-qa",
    # Speech in, speech (and text) out; no separate text question.
    "speech_to_speech": "spoken-dialogue",
    "speech_to_speech_response": "spoken-dialogue",
    "duplex_speech_dialogue": "spoken-dialogue",
    "offline_speech_dialogue": "spoken-dialogue",
    "tool_speech_dialogue": "spoken-dialogue",
    "speech_session": "spoken-dialogue",
    # Audio in, its words (or language) out; no question.
    "speech_to_text": "transcription-only",
    "transcription": "transcription-only",
    "transcription_streaming": "transcription-only",
    "speech_transcription": "transcription-only",
    "speech_translation": "transcription-only",
    "batch_speech_transcription": "transcription-only",
    "streaming_speech_transcription": "transcription-only",
    "mixed_batch_speech_to_text": "transcription-only",
    "automatic_speech_recognition": "transcription-only",
    "audio_language_identification": "transcription-only",
    # Text and a reference voice clip in, speech in that voice out.
    "reference_audio_generation": "voice-cloning",
    # Text in, speech out.
    "text_to_speech": "speech-output-only",
    "streaming_text_to_speech": "speech-output-only",
    "text_to_audio": "speech-output-only",
    "audio_generation": "speech-output-only",
    "speech_generation": "speech-output-only",
    # Text in, music out.
    "text_to_music": "music-generation",
    "music_generation": "music-generation",
    # Text in, a video with its soundtrack out.
    "text_to_audio_video": "audio-video-generation",
}
# Classes whose Tasks feed the model audio.
TAKES_AUDIO = frozenset({"audio-qa", "spoken-dialogue", "transcription-only", "voice-cloning"})
_AUDIO_WORDS = frozenset({"audio", "audios", "speech", "voice", "voices", "sound", "soundtrack", "music", "spoken",
                          "transcription", "transcribe", "asr", "tts", "wav", "waveform", "song"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def task_class(name: str) -> str | None:
    """The class of a listed audio Task; None when `name` is not in the list."""
    return AUDIO_TASKS.get(name.strip().lower())


def speaks_of_audio(name: str) -> bool:
    """Whether a Task name has an audio word in it (`speech`, `audio`, `voice`, `music`, ...)."""
    return bool(set(name.strip().lower().split("_")) & _AUDIO_WORDS)


def interface_task(interface: str) -> str:
    """The Task name of a Task SDK interface: `IAudioTextToText` -> `audio_text_to_text`."""
    bare = interface[1:] if interface[:1] == "I" and interface[1:2].isupper() else interface
    return _CAMEL.sub("_", bare).lower()
