"""Signal analysis with numpy on decoded PCM: tonal events, pitch, loudness, channels, voice F0.

Pure functions of the samples; no speech recognition and no knowledge of questions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "FRAME_S",
    "ToneEvent",
    "channel_levels_db",
    "frame_rms",
    "is_silent",
    "spectral_flux",
    "sounding_span",
    "tone_events",
    "tone_track",
    "voice_f0_hz",
]

FRAME_S = 0.010  # analysis hop; every time below is a multiple of it
_WIN_S = 0.032  # FFT window: 31 Hz bins before interpolation
_SILENCE_DBFS = -60.0  # below this the whole clip counts as silent
_TONAL_FRACTION = 0.8  # share of a frame's energy within +-2 bins of its strongest peak
_MIN_EVENT_S = 0.03
# Below this a spectral peak is the drift of low-frequency noise (pink, brown), not a tone anyone hears.
_MIN_TONE_HZ = 50.0
# Consecutive frames of one tone differ by less than this in peak frequency (a 4x sweep over 0.5 s moves
# under 3 % per 10 ms hop); a larger jump ends one event and starts another.
_MAX_STEP = 0.06


@dataclass(frozen=True, slots=True)
class ToneEvent:
    """One steady or gliding tone: where it is, its level and its pitch at start, middle and end."""

    start_s: float
    end_s: float
    rms_db: float
    freq_hz: float
    start_freq_hz: float
    end_freq_hz: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def _db(x: np.ndarray | float) -> np.ndarray | float:
    return 20.0 * np.log10(np.maximum(x, 1e-10))


def frame_rms(x: np.ndarray, rate: int) -> np.ndarray:
    """RMS of each FRAME_S hop of a mono signal."""
    hop = max(1, int(round(rate * FRAME_S)))
    n = len(x) // hop
    if n == 0:
        whole: np.ndarray = np.sqrt(np.mean(np.square(x, dtype=np.float64), keepdims=True))
        return whole
    frames = x[: n * hop].reshape(n, hop).astype(np.float64)
    rms: np.ndarray = np.sqrt(np.mean(frames * frames, axis=1))
    return rms


def is_silent(samples: np.ndarray) -> bool:
    """True when no 10 ms stretch of any channel rises above -60 dBFS."""
    peak = float(np.max(np.abs(samples))) if samples.size else 0.0
    return peak < 10 ** (_SILENCE_DBFS / 20)


def spectral_flux(x: np.ndarray, rate: int) -> float:
    """Median, over 10 ms hops, of the mean absolute change of the log spectrum (32 ms Hann frames): how
    much a sound's spectrum moves. A voice's formants and pitch move (about 0.6 here); a hum, a chord or a
    held tone does not (under 0.2)."""
    hop, win = max(1, int(round(rate * FRAME_S))), int(round(rate * _WIN_S))
    n = (len(x) - win) // hop + 1
    if n < 3:
        return 0.0
    idx = np.arange(win)[None, :] + hop * np.arange(n)[:, None]
    spec = np.log(np.abs(np.fft.rfft(x[idx].astype(np.float64) * np.hanning(win)[None, :], axis=1)) + 1e-6)
    return float(np.median(np.mean(np.abs(np.diff(spec, axis=0)), axis=1)))


def sounding_span(x: np.ndarray, rate: int) -> tuple[float, float] | None:
    """Start and end (s) of the part louder than 30 dB under the loudest frame, or None if silent."""
    rms = frame_rms(x, rate)
    if rms.size == 0 or _db(rms.max()) < _SILENCE_DBFS:
        return None
    on = np.flatnonzero(_db(rms) > _db(rms.max()) - 30.0)
    return float(on[0] * FRAME_S), float((on[-1] + 1) * FRAME_S)


def tone_track(x: np.ndarray, rate: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per hop: peak frequency (Hz, interpolated), tonality (0..1) and RMS (linear)."""
    hop = max(1, int(round(rate * FRAME_S)))
    win = int(round(rate * _WIN_S))
    n = max(0, (len(x) - win) // hop + 1)
    if n == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    idx = np.arange(win)[None, :] + hop * np.arange(n)[:, None]
    frames = x[idx].astype(np.float64) * np.hanning(win)[None, :]
    spec = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    total = spec.sum(axis=1) + 1e-20
    k = np.clip(np.argmax(spec[:, 1:], axis=1) + 1, 1, spec.shape[1] - 2)
    rows = np.arange(n)
    # Energy within +-2 bins of the peak: a Hann-windowed sine puts nearly all its energy there.
    lo, hi = np.clip(k - 2, 0, None), np.clip(k + 3, None, spec.shape[1])
    csum = np.concatenate([np.zeros((n, 1)), np.cumsum(spec, axis=1)], axis=1)
    tonality = (csum[rows, hi] - csum[rows, lo]) / total
    a, b, c = (np.log(spec[rows, k - 1] + 1e-20), np.log(spec[rows, k] + 1e-20),
               np.log(spec[rows, k + 1] + 1e-20))
    denom = a - 2 * b + c
    offset = np.where(np.abs(denom) > 1e-12, 0.5 * (a - c) / np.where(denom == 0, 1, denom), 0.0)
    freq = (k + np.clip(offset, -0.5, 0.5)) * rate / win
    rms = np.sqrt(np.mean(x[idx].astype(np.float64) ** 2, axis=1))
    return freq, tonality, rms


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Half-open index runs where mask is True."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))


def tone_events(x: np.ndarray, rate: int) -> list[ToneEvent]:
    """Tonal events (beeps, tones, sweeps) in time order; speech and noise are not tonal events.

    A voiced vowel can be as tonal as a beep in one frame, so an event must also hold a smooth pitch
    (small second difference: steady or gliding) and a flat level over its middle.
    """
    freq, tonality, rms = tone_track(x, rate)
    if rms.size == 0 or _db(float(rms.max())) < _SILENCE_DBFS:
        return []
    level = np.asarray(_db(rms))
    mask = ((level > max(float(level.max()) - 35.0, _SILENCE_DBFS)) & (tonality > _TONAL_FRACTION)
            & (freq >= _MIN_TONE_HZ))
    # A jump in peak frequency between two frames of the mask separates two sounds (a beep, then the noise
    # under it): split there, so that neither is judged with the other's pitch track.
    jump = np.zeros_like(mask)
    jump[1:] = np.abs(np.diff(freq)) > _MAX_STEP * np.minimum(freq[1:], freq[:-1])
    events = []
    for s, e in (run for start, end in _runs(mask) for run in _split(start, end, jump)):
        # Frame i covers [i*hop, i*hop+win): a run of frames spans one window more than its hops.
        if (e - s) * FRAME_S + (_WIN_S - FRAME_S) < _MIN_EVENT_S or not _steady(freq[s:e], level[s:e]):
            continue
        f = freq[s:e]
        if _harmonic_db(x, rate, s * FRAME_S, e * FRAME_S, float(np.median(f))) > -30.0:
            continue
        start_s, end_s = _refine_edges(x, rate, s * FRAME_S, e * FRAME_S + (_WIN_S - FRAME_S))
        edge = max(1, (e - s) // 5)
        events.append(ToneEvent(
            start_s=start_s, end_s=end_s,
            rms_db=float(_db(np.sqrt(np.mean(rms[s:e] ** 2)))),
            freq_hz=float(np.median(f)),
            start_freq_hz=float(np.median(f[:edge])), end_freq_hz=float(np.median(f[-edge:])),
        ))
    return events


def _split(start: int, end: int, jump: np.ndarray) -> list[tuple[int, int]]:
    """The run [start, end) cut before every frame where `jump` is set."""
    cuts = [start, *(i for i in range(start + 1, end) if jump[i]), end]
    return list(zip(cuts, cuts[1:], strict=False))


def _steady(freq: np.ndarray, level_db: np.ndarray) -> bool:
    """A synthetic tone: pitch with a near-zero second difference and a level flat within 3 dB.

    The second difference is judged against 0.3 % of the pitch, but never below 1.5 Hz: the interpolated
    peak of a low tone (120 Hz in 31 Hz bins) wobbles by about a hertz from frame to frame.
    """
    if len(freq) < 3:
        return False
    wobble = float(np.median(np.abs(np.diff(freq, 2))))
    curvature = wobble / max(float(np.median(freq)), 1.5 / 0.003)
    cut = len(level_db) // 5
    middle = level_db[cut: len(level_db) - cut] if len(level_db) - 2 * cut >= 1 else level_db
    return curvature < 0.003 and float(np.ptp(middle)) < 3.0


def _harmonic_db(x: np.ndarray, rate: int, start_s: float, end_s: float, f0: float) -> float:
    """Level of the 2nd and 3rd harmonics against the fundamental (dB): a voice has them, a beep not."""
    seg = x[int(start_s * rate): int(end_s * rate) + int(_WIN_S * rate)].astype(np.float64)
    if len(seg) < 16:
        return 0.0
    spec = np.abs(np.fft.rfft(seg * np.hanning(len(seg)))) ** 2
    bin_hz = rate / len(seg)

    def band(f: float) -> float:
        k = int(round(f / bin_hz))
        w = max(2, int(round(0.03 * f / bin_hz)))
        return float(spec[max(0, k - w): k + w + 1].sum()) if k < len(spec) else 0.0

    fundamental = band(f0)
    harmonics = band(2 * f0) + band(3 * f0)
    return float(_db(np.sqrt(harmonics / max(fundamental, 1e-30))))


def _refine_edges(x: np.ndarray, rate: int, start_s: float, end_s: float) -> tuple[float, float]:
    """Move coarse event edges to where a 2 ms envelope crosses half the event's level."""
    lo = max(0, int((start_s - _WIN_S) * rate))
    hi = min(len(x), int((end_s + _WIN_S) * rate))
    hop = max(1, int(rate * 0.002))
    seg = x[lo:hi].astype(np.float64)
    n = len(seg) // hop
    if n < 3:
        return start_s, end_s
    env = np.sqrt(np.mean(seg[: n * hop].reshape(n, hop) ** 2, axis=1))
    on = np.flatnonzero(env > 0.5 * np.median(env[env > 0.5 * env.max()]))
    return (lo + on[0] * hop) / rate, (lo + (on[-1] + 1) * hop) / rate


def channel_levels_db(samples: np.ndarray) -> list[float]:
    """RMS level (dBFS) of each channel."""
    return [float(_db(np.sqrt(np.mean(np.square(samples[:, c], dtype=np.float64)))))
            for c in range(samples.shape[1])]


def voice_f0_hz(x: np.ndarray, rate: int, fmin: float = 60.0, fmax: float = 400.0) -> float | None:
    """Median fundamental frequency of voiced frames (normalised autocorrelation), or None."""
    win = int(rate * 0.040)
    hop = int(rate * 0.010)
    if len(x) < win:
        return None
    lag_min, lag_max = int(rate / fmax), min(int(rate / fmin), win - 1)
    level = frame_rms(x, rate)
    floor = level.max() * 10 ** (-30 / 20)
    f0s = []
    for start in range(0, len(x) - win, hop):
        frame = x[start:start + win].astype(np.float64)
        if np.sqrt(np.mean(frame * frame)) < floor:
            continue
        frame = frame - frame.mean()
        spec = np.fft.rfft(frame, n=2 * win)
        ac = np.fft.irfft(spec * np.conj(spec))[:win]
        if ac[0] <= 0:
            continue
        # Normalise by the overlap so long lags are not penalised (unbiased estimate).
        ac = ac / ac[0] * win / (win - np.arange(win))
        seg = ac[lag_min:lag_max]
        lag = int(np.argmax(seg)) + lag_min
        if seg.max() < 0.5:
            continue
        f0s.append(rate / lag)
    if len(f0s) < 5:
        return None
    return float(np.median(f0s))
