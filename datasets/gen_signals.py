"""Signal building blocks of the dataset generator: tones, sweeps, noise, beeps, speech (flite, espeak-ng).
Generation-time only; every function is deterministic (seeded noise, sox resamples without dither).
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

# --- signal building blocks (float64 mono at the clip's rate) ------------------------------------

# Generation-time only (Debian espeak-ng, flite and sox; numpy, soundfile): the loader never imports this module.
def _ramp(x: np.ndarray, rate: int, ms: float = 5.0) -> np.ndarray:
    n = min(int(rate * ms / 1000), len(x) // 2)
    if n:
        w = 0.5 - 0.5 * np.cos(np.pi * np.arange(n) / n)
        x[:n] *= w
        x[-n:] *= w[::-1]
    return x


def tone(freq: float, seconds: float, rate: int, amp: float = 0.5) -> np.ndarray:
    t = np.arange(round(seconds * rate)) / rate
    return _ramp(amp * np.sin(2 * np.pi * freq * t), rate)


def sweep(f0: float, f1: float, seconds: float, rate: int, amp: float = 0.5) -> np.ndarray:
    """Exponential sweep from f0 to f1 Hz."""
    n = round(seconds * rate)
    k = np.log(f1 / f0) / seconds
    t = np.arange(n) / rate
    return _ramp(amp * np.sin(2 * np.pi * f0 * (np.exp(k * t) - 1) / k), rate, ms=20)


def gap(seconds: float, rate: int) -> np.ndarray:
    return np.zeros(round(seconds * rate))


def pink_noise(seconds: float, rate: int, amp: float, seed: int) -> np.ndarray:
    n = round(seconds * rate)
    spec = np.fft.rfft(np.random.default_rng(seed).standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / rate)
    spec[1:] /= np.sqrt(f[1:])
    spec[0] = 0
    x = np.fft.irfft(spec, n)
    return _ramp(amp * x / np.max(np.abs(x)), rate, ms=20)


def beeps(count: int, rate: int, freq: float = 1000.0, on: float = 0.15, off: float = 0.25,
          lead: float = 0.3, tail: float = 0.3) -> np.ndarray:
    parts = [gap(lead, rate)]
    for i in range(count):
        parts += [tone(freq, on, rate), gap(off if i < count - 1 else tail, rate)]
    return np.concatenate(parts)


def tts(engine: str, voice: str, text: str, rate: int, stretch: float | None = None,
        speed: int | None = None, pitch: int | None = None) -> np.ndarray:
    """Synthesise text, resample to `rate` with sox (no dither) and trim silence at both ends."""
    return _tts(engine, voice, text, rate, stretch, speed, pitch).copy()


@functools.lru_cache(maxsize=256)
def _tts(engine: str, voice: str, text: str, rate: int, stretch: float | None, speed: int | None,
         pitch: int | None) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        raw, res = Path(tmp) / "raw.wav", Path(tmp) / "res.wav"
        if engine == "flite":
            cmd = ["flite", "-voice", voice, "-t", text, "-o", str(raw)]
            if stretch:
                cmd[1:1] = ["--setf", f"duration_stretch={stretch}"]
            if pitch:  # mean F0 target in Hz
                cmd[1:1] = ["--setf", f"int_f0_target_mean={pitch}"]
        else:
            cmd = ["espeak-ng", "-v", voice, "-w", str(raw), text]
            if speed:
                cmd[1:1] = ["-s", str(speed)]
            if pitch:  # espeak-ng pitch 0-99
                cmd[1:1] = ["-p", str(pitch)]
        subprocess.run(cmd, check=True, capture_output=True)
        subprocess.run(["sox", "-D", str(raw), "-e", "floating-point", "-b", "32", str(res),
                        "rate", "-v", str(rate)], check=True, capture_output=True)
        x, got = sf.read(str(res), dtype="float64")
    assert got == rate, (got, rate)
    loud = np.flatnonzero(np.abs(x) > 0.02 * np.max(np.abs(x)))
    x = x[loud[0]: loud[-1] + 1]  # speech onsets and lengths are then exact in the labels
    return _ramp(0.6 * x / np.max(np.abs(x)), rate, ms=3)


def said(engine: str, voice: str, text: str, rate: int, pitch: int | None = None) -> np.ndarray:
    """Speech with 0.3 s of silence around it (recognisers drop a first word that starts at once)."""
    return cat(gap(0.3, rate), tts(engine, voice, text, rate, pitch=pitch), gap(0.3, rate))


def white_noise(seconds: float, rate: int, amp: float, seed: int) -> np.ndarray:
    """Gaussian white noise with its peak at `amp`."""
    x = np.random.default_rng(seed).standard_normal(round(seconds * rate))
    return _ramp(amp * x / np.max(np.abs(x)), rate, ms=20)


def brown_noise(seconds: float, rate: int, amp: float, seed: int) -> np.ndarray:
    """Brown (1/f^2) noise: integrated white noise with its drift removed, peak at `amp`."""
    n = round(seconds * rate)
    x = np.cumsum(np.random.default_rng(seed).standard_normal(n))
    x -= np.polyval(np.polyfit(np.arange(n), x, 1), np.arange(n))
    return _ramp(amp * x / np.max(np.abs(x)), rate, ms=20)


def chord(freqs: tuple[float, ...], seconds: float, rate: int, amp: float = 0.5) -> np.ndarray:
    """Several sine tones at once (a steady chord), peak below `amp`."""
    return sum((tone(f, seconds, rate, amp / len(freqs)) for f in freqs), start=np.zeros(round(seconds * rate)))


def peak_at(x: np.ndarray, dbfs: float) -> np.ndarray:
    """`x` scaled so that its peak sits at `dbfs` (dB relative to full scale)."""
    return x * (10 ** (dbfs / 20) / np.max(np.abs(x)))


def mix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sum of two signals, the shorter one padded with silence at its end."""
    n = max(len(a), len(b))
    return np.pad(a, (0, n - len(a))) + np.pad(b, (0, n - len(b)))


def cat(*parts: np.ndarray) -> np.ndarray:
    return np.concatenate(parts)


def stereo(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return np.stack([left, right], axis=1)


# --- clips and items ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Clip:
    """One audio file: how to build it at its rate, and the words it speaks (None: no speech)."""

    name: str
    container: str
    rate: int
    recipe: str
    build: Callable[[int], np.ndarray]
    transcript: str | None = None


@dataclass(frozen=True)
class Q:
    """One question about a clip."""

    id: str
    clip: str
    kind: str
    question: str
    answer: str
    scoring: str
    transcript_answerable: bool = False
    choices: tuple[str, ...] = ()
    aliases: dict[str, list[str]] = field(default_factory=dict)
    variants: tuple[str, ...] = ()
    tolerance: float = 0.0
