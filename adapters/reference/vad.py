"""Speech segments from the Silero VAD ONNX model that ships inside faster-whisper (16 kHz mono).

Blocking; the ONNX session is created once per process and is safe to share between threads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:
    from faster_whisper.vad import VadOptions, get_speech_timestamps, get_vad_model
except ImportError as exc:  # a host without faster-whisper (CTranslate2) runs the engine without speech models
    SPEECH_MISSING = f"faster-whisper is not importable ({exc})"
else:
    SPEECH_MISSING = ""

__all__ = ["SPEECH_MISSING", "VAD_RATE_HZ", "SpeechSegment", "load_vad", "speech_segments"]

VAD_RATE_HZ = 16000
# No padding: segment edges are used as timings (the onset of speech, in seconds).
_OPTIONS = None if SPEECH_MISSING else VadOptions(threshold=0.5, min_speech_duration_ms=120,
                                                  min_silence_duration_ms=150, speech_pad_ms=0)


@dataclass(frozen=True, slots=True)
class SpeechSegment:
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def load_vad() -> None:
    """Create the ONNX session now, so the first request does not pay for it."""
    get_vad_model()


def speech_segments(x16k: np.ndarray) -> list[SpeechSegment]:
    """Speech segments of a 16 kHz mono float32 signal, in time order."""
    if len(x16k) < 512:
        return []
    stamps = get_speech_timestamps(x16k.astype(np.float32, copy=False), _OPTIONS,
                                   sampling_rate=VAD_RATE_HZ)
    return [SpeechSegment(s["start"] / VAD_RATE_HZ, s["end"] / VAD_RATE_HZ) for s in stamps]
