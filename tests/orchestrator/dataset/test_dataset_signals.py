"""Independent signal checks of the committed labels, and generator determinism (needs the TTS tools)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from orchestrator.dataset import load_dataset

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "datasets" / "audioqa-v1"


@pytest.fixture(scope="module")
def ds():
    return load_dataset(SHIPPED)


def _read(item) -> tuple[np.ndarray, int]:
    x, rate = sf.read(str(SHIPPED / item.audio), dtype="float64", always_2d=True)
    return x, rate


def _segments(x: np.ndarray, rate: int, rel: float = 0.1, hold_s: float = 0.08) -> list[tuple[int, int]]:
    """Active (start, end) sample spans from a 5 ms RMS envelope, bridging gaps shorter than hold_s."""
    mono = np.abs(x).max(axis=1)
    win = max(1, rate // 200)
    env = np.sqrt(np.convolve(mono ** 2, np.ones(win) / win, mode="same"))
    active = env > rel * env.max()
    spans: list[tuple[int, int]] = []
    idx = np.flatnonzero(np.diff(np.concatenate([[0], active.astype(int), [0]])))
    for start, end in zip(idx[::2], idx[1::2], strict=True):
        if spans and start - spans[-1][1] < hold_s * rate:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


def _peak_hz(x: np.ndarray, rate: int) -> float:
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1 / rate)[np.argmax(spec)])


def _f0(x: np.ndarray, rate: int) -> float:
    """Median autocorrelation F0 over loud 40 ms frames."""
    n, hop, out = int(0.04 * rate), int(0.01 * rate), []
    for i in range(0, len(x) - n, hop):
        fr = x[i:i + n] - x[i:i + n].mean()
        if np.sqrt((fr ** 2).mean()) < 0.05 * np.abs(x).max():
            continue
        ac = np.correlate(fr, fr, "full")[n - 1:]
        lo, hi = int(rate / 400), int(rate / 60)
        k = lo + int(np.argmax(ac[lo:hi]))
        if ac[k] > 0.5 * ac[0]:
            out.append(rate / k)
    return float(np.median(out))


def _by_kind(ds, kind: str):
    items = [it for it in ds.items if it.kind == kind]
    assert items, kind
    return items


class TestLabels:
    def test_beep_counts(self, ds) -> None:
        """The number of beeps found by an RMS envelope equals each count answer."""
        for it in _by_kind(ds, "count"):
            assert len(_segments(*_read(it))) == int(it.answer), it.id

    def test_channel_side(self, ds) -> None:
        """The channel with the energy is the answered side; the other channel is silent."""
        for it in _by_kind(ds, "channel"):
            x, _ = _read(it)
            energy = (x ** 2).sum(axis=0)
            side = "left" if energy[0] > energy[1] else "right"
            assert side == it.answer and energy.min() < 1e-6 * energy.max(), it.id

    def test_tone_order(self, ds) -> None:
        """For pitch items the FFT peaks of the two tones order as the answer says."""
        for it in _by_kind(ds, "pitch"):
            x, rate = _read(it)
            (a0, a1), (b0, b1) = _segments(x, rate)
            first, second = _peak_hz(x[a0:a1, 0], rate), _peak_hz(x[b0:b1, 0], rate)
            higher = "first" if first > second else "second"
            assert (higher if "higher" in it.question else {"first": "second", "second": "first"}[higher]) \
                == it.answer, it.id

    def test_frequencies(self, ds) -> None:
        """The FFT peak of each frequency item is within half its tolerance of the answer."""
        for it in _by_kind(ds, "frequency"):
            x, rate = _read(it)
            assert abs(_peak_hz(x[:, 0], rate) - float(it.answer)) <= it.tolerance / 2, it.id

    def test_durations(self, ds) -> None:
        """Tone lengths match numeric duration answers within 20 ms; the longer tone is the answered one."""
        for it in _by_kind(ds, "duration"):
            x, rate = _read(it)
            spans = _segments(x, rate, rel=0.05)
            if it.scoring == "numeric" and it.transcript is None:
                (s0, s1), = spans
                assert abs((s1 - s0) / rate - float(it.answer)) < 0.02, it.id
            elif it.scoring == "numeric":  # the whole recording's length
                assert abs(it.duration_s - float(it.answer)) <= 0.5, it.id
            else:
                (a0, a1), (b0, b1) = spans
                assert ("first" if a1 - a0 > b1 - b0 else "second") == it.answer, it.id

    def test_sweep_direction(self, ds) -> None:
        """Zero-crossing rate rises over a rising sweep and falls over a falling one."""
        for it in _by_kind(ds, "direction"):
            x, rate = _read(it)
            (s0, s1), = _segments(x, rate)
            mid = (s0 + s1) // 2
            zc = [np.count_nonzero(np.diff(np.sign(x[a:b, 0]))) for a, b in ((s0, mid), (mid, s1))]
            assert ("rising" if zc[1] > zc[0] else "falling") == it.answer, it.id

    def test_loudness(self, ds) -> None:
        """The beep with the larger RMS is the answered one, by more than 10 dB."""
        for it in _by_kind(ds, "loudness"):
            x, rate = _read(it)
            (a0, a1), (b0, b1) = _segments(x, rate, rel=0.02)
            ra, rb = (np.sqrt((x[s:e] ** 2).mean()) for s, e in ((a0, a1), (b0, b1)))
            assert ("first" if ra > rb else "second") == it.answer and abs(20 * np.log10(ra / rb)) > 10, it.id

    def test_onsets(self, ds) -> None:
        """The first sample above 2 % of the peak lies within 20 ms of each timing answer."""
        for it in _by_kind(ds, "timing"):
            x, rate = _read(it)
            onset = np.flatnonzero(np.abs(x).max(axis=1) > 0.02 * np.abs(x).max())[0] / rate
            assert abs(onset - float(it.answer)) < 0.02, it.id

    def test_silence(self, ds) -> None:
        """The clip answered 'silent' is all zeros; the one answered 'sound' is not."""
        for it in _by_kind(ds, "silence"):
            x, _ = _read(it)
            assert (np.abs(x).max() == 0) == (it.answer == "silent"), it.id

    def test_speaker_sex_by_f0(self, ds) -> None:
        """Median F0 is below 140 Hz for items answered male and above 180 Hz for female."""
        for it in _by_kind(ds, "speaker_sex"):
            x, rate = _read(it)
            f0 = _f0(x[:, 0], rate)
            assert (f0 < 140) if it.answer == "male" else (f0 > 180), (it.id, f0)

    def test_speaking_rate(self, ds) -> None:
        """Of the two renditions of one sentence, the shorter one is the answered faster one."""
        for it in _by_kind(ds, "speaking_rate"):
            x, rate = _read(it)
            spans = _segments(x, rate, rel=0.02, hold_s=0.5)
            assert len(spans) == 2, it.id
            (a0, a1), (b0, b1) = spans
            assert ("first" if a1 - a0 < b1 - b0 else "second") == it.answer, it.id


V2 = ROOT / "datasets" / "audioqa-v2"


@pytest.fixture(scope="module")
def v2():
    return load_dataset(V2)


def _read2(item) -> tuple[np.ndarray, int]:
    x, rate = sf.read(str(V2 / item.audio), dtype="float64", always_2d=True)
    return x, rate


_ORD = ("first", "second", "third")


class TestV2Labels:
    """audioqa-v2's answers checked against the decoded audio by means of their own, not the generator's."""

    def test_beep_counts(self, v2) -> None:
        """The number of beeps an RMS envelope finds (noise beds 28 dB down included) equals each count."""
        for it in _by_kind(v2, "count"):
            assert len(_segments(*_read2(it))) == int(it.answer), it.id

    def test_frequencies(self, v2) -> None:
        """Each frequency item's FFT peak lies within half its tolerance of the answer."""
        for it in _by_kind(v2, "frequency"):
            x, rate = _read2(it)
            assert abs(_peak_hz(x[:, 0], rate) - float(it.answer)) <= it.tolerance / 2, it.id

    def test_pitch_order(self, v2) -> None:
        """The tones' FFT peaks order as the answer says (highest or lowest of two or three)."""
        for it in _by_kind(v2, "pitch"):
            x, rate = _read2(it)
            peaks = [_peak_hz(x[a:b, 0], rate) for a, b in _segments(x, rate)]
            assert len(peaks) == len(it.choices), it.id
            low = any(w in it.question for w in ("lower", "lowest", "deeper"))
            assert _ORD[int(np.argmin(peaks) if low else np.argmax(peaks))] == it.answer, it.id

    def test_loudness(self, v2) -> None:
        """The beep with the largest (or, asked so, smallest) RMS is the answered one, by at least 8 dB."""
        for it in _by_kind(v2, "loudness"):
            x, rate = _read2(it)
            rms = [float(np.sqrt((x[a:b] ** 2).mean())) for a, b in _segments(x, rate, rel=0.02)]
            assert len(rms) == len(it.choices), it.id
            quiet = any(w in it.question for w in ("quiet", "soft"))
            pick = int(np.argmin(rms) if quiet else np.argmax(rms))
            assert _ORD[pick] == it.answer, it.id
            others = [r for i, r in enumerate(rms) if i != pick]
            assert all(abs(20 * np.log10(rms[pick] / r)) >= 7.9 for r in others), it.id

    def test_durations(self, v2) -> None:
        """One tone's length within 20 ms of the answer; of two, the longer or shorter as asked; a recording's
        length within 0.05 s."""
        for it in _by_kind(v2, "duration"):
            x, rate = _read2(it)
            if it.scoring == "numeric" and ("recording" in it.question or "clip" in it.question):
                assert abs(it.duration_s - float(it.answer)) <= 0.05, it.id
                continue
            spans = _segments(x, rate, rel=0.05)
            lengths = [(b - a) / rate for a, b in spans]
            if it.scoring == "numeric":
                assert len(lengths) == 1 and abs(lengths[0] - float(it.answer)) < 0.02, it.id
            else:
                short = any(w in it.question for w in ("shorter", "briefer"))
                assert _ORD[int(np.argmin(lengths) if short else np.argmax(lengths))] == it.answer, it.id

    def test_direction(self, v2) -> None:
        """Zero crossings per second rise over the sounding span of a rising sweep or melody, fall otherwise."""
        for it in _by_kind(v2, "direction"):
            x, rate = _read2(it)
            spans = _segments(x, rate)
            s0, s1 = spans[0][0], spans[-1][1]
            third = (s1 - s0) // 3
            zc = [np.count_nonzero(np.diff(np.sign(x[a:a + third, 0]))) for a in (s0, s1 - third)]
            assert (zc[1] > zc[0]) == (it.answer in ("rising", "up")), it.id

    def test_channel_side(self, v2) -> None:
        """The side with the energy is the answer, the other at least 20 dB down; "both" is equal energy."""
        for it in _by_kind(v2, "channel"):
            x, _ = _read2(it)
            energy = (x ** 2).sum(axis=0)
            ratio_db = 10 * np.log10(max(energy[0], 1e-12) / max(energy[1], 1e-12))
            want = {"left": ratio_db > 20, "right": ratio_db < -20, "both": abs(ratio_db) < 1}[it.answer]
            assert want, (it.id, ratio_db)

    def test_onsets(self, v2) -> None:
        """The first sample above 2 % of the peak lies within 20 ms of each timing answer."""
        for it in _by_kind(v2, "timing"):
            x, rate = _read2(it)
            onset = np.flatnonzero(np.abs(x).max(axis=1) > 0.02 * np.abs(x).max())[0] / rate
            assert abs(onset - float(it.answer)) < 0.02, it.id

    def test_silence(self, v2) -> None:
        """Digital silence exactly where the answer says the clip is silent, whatever the wording."""
        for it in _by_kind(v2, "silence"):
            x, _ = _read2(it)
            zero = bool(np.abs(x).max() == 0)
            if it.answer in ("silent", "sound"):
                assert zero == (it.answer == "silent"), it.id
            else:
                asks_silence = any(w in it.question for w in ("silent", "quiet"))
                assert zero == ((it.answer == "yes") == asks_silence), it.id

    def test_speaker_sex_by_f0(self, v2) -> None:
        """Median F0 is below 140 Hz for items answered male and above 160 Hz for female."""
        for it in _by_kind(v2, "speaker_sex"):
            x, rate = _read2(it)
            f0 = _f0(x[:, 0], rate)
            assert (f0 < 140) if it.answer == "male" else (f0 > 160), (it.id, f0)

    def test_speaking_rate(self, v2) -> None:
        """Of the two renditions of one sentence, the shorter is the faster one, as the answer says."""
        for it in _by_kind(v2, "speaking_rate"):
            x, rate = _read2(it)
            spans = _segments(x, rate, rel=0.02, hold_s=0.5)
            assert len(spans) == 2, it.id
            (a0, a1), (b0, b1) = spans
            faster = "first" if a1 - a0 < b1 - b0 else "second"
            slow = "slow" in it.question
            assert (faster if not slow else {"first": "second", "second": "first"}[faster]) == it.answer, it.id


@pytest.mark.slow
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("espeak-ng", "flite", "sox")),
                    reason="espeak-ng, flite and sox are needed to regenerate the dataset (not installed here)")
@pytest.mark.parametrize("name", ["audioqa-v1", "audioqa-v2"])
def test_generator_is_deterministic(tmp_path: Path, name: str) -> None:
    """Regenerating a shipped set into a temp folder reproduces every PCM hash and the committed manifest byte
    for byte (audioqa-v2 from its seed)."""
    shipped = ROOT / "datasets" / name
    out = tmp_path / name
    run = subprocess.run([sys.executable, str(ROOT / "datasets" / "generate.py"), "--set", name, str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    fresh, committed = load_dataset(out), load_dataset(shipped)
    assert [(it.id, it.pcm_sha256) for it in fresh.items] == [(it.id, it.pcm_sha256) for it in committed.items]
    assert (out / "manifest.jsonl").read_bytes() == (shipped / "manifest.jsonl").read_bytes()
    assert fresh.identity == committed.identity
