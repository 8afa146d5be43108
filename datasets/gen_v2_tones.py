"""audioqa-v2's kinds made of tones and noise: count, pitch, frequency, duration, direction, loudness, silence.

Generation-time only; gen_v2.recipes calls these builders.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
from gen_signals import cat, gap, peak_at, pink_noise, stereo, sweep, tone
from gen_v2_banks import WORDINGS
from gen_v2_kit import (
    FS,
    FST,
    ORD_ALIASES,
    SILENT,
    UP,
    UPDOWN,
    YES_NO,
    Built,
    Kit,
    said_by,
    tones,
    voice_name,
)


def build_count(k: Kit, n: int) -> Built:
    out: Built = []
    counts = k.rng.permutation(np.resize(np.arange(1, 10), n))
    for i, count in enumerate(counts.tolist()):
        freq = k.pick((440, 500, 600, 750, 800, 880, 1000, 1200, 1500, 2000))
        on, off = k.uniform(0.08, 0.25), k.uniform(0.12, 0.45)
        lead, tail = k.uniform(0.2, 0.6), k.uniform(0.2, 0.6)
        noisy, two = k.rng.random() < 0.25, k.rng.random() < 0.15
        seed = int(k.rng.integers(1 << 30))
        f = k.fmt(channels=2 if two else 1, min_rate=3 * freq)

        def build(r: int, count: int = count, freq: float = freq, on: float = on, off: float = off,
                  lead: float = lead, tail: float = tail, noisy: bool = noisy, two: bool = two,
                  seed: int = seed) -> np.ndarray:
            parts = [gap(lead, r)]
            for j in range(count):
                parts += [tone(freq, on, r), gap(off if j < count - 1 else tail, r)]
            x = cat(*parts)
            x = x + pink_noise(len(x) / r, r, 0.02, seed)[: len(x)] if noisy else x
            return stereo(x, x) if two else x

        recipe = (f"{count} beeps of {freq} Hz, {on:g} s on, {off:g} s off" + (", over pink noise 28 dB down"
                  if noisy else "") + (", both channels" if two else ""))
        clip = k.clip(i, f, recipe, build)
        out.append((clip, [k.q(clip, "", k.ask("count"), str(count), "numeric")]))
    return out



def build_pitch(k: Kit, n: int) -> Built:
    out: Built = []
    made, i = 0, 0
    while made < n:
        three = bool(k.rng.random() < 0.4)
        m = 3 if three else 2
        base = float(np.exp(k.rng.uniform(np.log(200), np.log(1500))))
        steps = [0.0, *sorted(k.rng.choice(np.arange(3, 13), m - 1, replace=False).tolist())]
        freqs = [round(base * 2 ** (s / 12)) for s in k.rng.permutation(steps).tolist()]
        durs = [k.uniform(0.3, 0.7) for _ in range(m)]
        gaps = [k.uniform(0.15, 0.4) for _ in range(m + 1)]
        f = k.fmt(min_rate=3 * max(freqs))
        recipe = " then ".join(f"{fr} Hz" for fr in freqs) + ", " + ", ".join(f"{d:g} s" for d in durs)
        clip = k.clip(i, f, recipe, partial(tones, freqs, durs, gaps, [0.5] * m))
        hi, lo = FST[int(np.argmax(freqs))], FST[int(np.argmin(freqs))]
        choices = FST[:m]
        keys = [("pitch_high3", hi), ("pitch_low3", lo)] if three else [("pitch_high2", hi), ("pitch_low2", lo)]
        if three:
            keys = [keys[int(k.rng.integers(2))]]
        qs = []
        for key, answer in keys:
            if made < n:
                qs.append(k.q(clip, "-" + key.split("_")[1].rstrip("23"), k.ask(key), answer, "choice",
                              choices=choices, aliases={c: ORD_ALIASES[c] for c in choices}))
                made += 1
        out.append((clip, qs))
        i += 1
    return out


def build_frequency(k: Kit, n: int) -> Built:
    grid = (120, 150, 200, 250, 300, 350, 400, 440, 500, 600, 650, 700, 750, 800, 880, 900, 1000, 1100, 1200, 1250,
            1500, 1600, 1800, 2000, 2200, 2500, 3000, 3200)
    out: Built = []
    for i in range(n):
        freq = k.pick(grid)
        dur, lead, amp = k.uniform(0.6, 2.0), k.uniform(0.1, 0.4), k.uniform(0.1, 0.7)
        f = k.fmt(min_rate=3 * freq)
        clip = k.clip(i, f, f"{freq} Hz for {dur:g} s at peak {amp:g}",
                      partial(tones, [freq], [dur], [lead, lead], [amp]))
        tol = max(10.0, round(0.05 * freq))
        out.append((clip, [k.q(clip, "", k.ask("frequency"), str(freq), "numeric", tolerance=tol)]))
    return out


def build_duration(k: Kit, n: int) -> Built:
    out: Built = []
    for i in range(n):
        freq = k.pick((300, 440, 500, 600, 800, 1000))
        f = k.fmt(min_rate=3 * freq)
        if i % 11 < 6:  # one tone: how long
            d, lead = k.uniform(0.3, 3.0, 0.05), k.uniform(0.15, 0.5)
            clip = k.clip(i, f, f"{freq} Hz for {d:g} s", partial(tones, [freq], [d], [lead, lead], [0.5]))
            out.append((clip, [k.q(clip, "", k.ask("duration"), f"{d:g}", "numeric", tolerance=max(0.15, round(0.1 * d, 2)))]))
        elif i % 11 < 10:  # two tones: which is longer or shorter
            short, ratio = k.uniform(0.2, 0.7), k.uniform(1.8, 3.5)
            durs = [short, round(short * ratio, 2)]
            if k.rng.random() < 0.5:
                durs.reverse()
            gaps = [k.uniform(0.15, 0.3), k.uniform(0.3, 0.5), k.uniform(0.15, 0.3)]
            clip = k.clip(i, f, f"{freq} Hz for {durs[0]:g} s, then for {durs[1]:g} s",
                          partial(tones, [freq, freq], durs, gaps, [0.5, 0.5]))
            key = "longer" if k.rng.random() < 0.5 else "shorter"
            answer = FS[int(np.argmax(durs) if key == "longer" else np.argmin(durs))]
            out.append((clip, [k.q(clip, "", k.ask(key), answer, "choice", choices=FS,
                                   aliases={c: ORD_ALIASES[c] for c in FS})]))
        else:  # a longer recording: how long is it
            total = k.uniform(4.0, 14.0, 0.1)
            seed = int(k.rng.integers(1 << 30))
            clip = k.clip(i, k.fmt(), f"pink noise for {total:g} s, seed {seed}",
                          partial(lambda r, t, s: pink_noise(t, r, 0.3, s), t=total, s=seed))
            out.append((clip, [k.q(clip, "", k.ask("length"), "CLIP_SECONDS", "numeric",
                                   tolerance=max(1.0, round(0.1 * total, 1)))]))
    return out

def _linear_sweep(f0: float, f1: float, seconds: float, rate: int, amp: float = 0.5) -> np.ndarray:
    t = np.arange(round(seconds * rate)) / rate
    x = amp * np.sin(2 * np.pi * (f0 * t + (f1 - f0) * t * t / (2 * seconds)))
    n = min(int(rate * 0.02), len(x) // 2)
    w = 0.5 - 0.5 * np.cos(np.pi * np.arange(n) / n)
    x[:n] *= w
    x[-n:] *= w[::-1]
    return x


def build_direction(k: Kit, n: int) -> Built:
    out: Built = []
    for i in range(n):
        up = bool(i % 2) ^ bool(k.rng.random() < 0.5)
        lo = float(np.exp(k.rng.uniform(np.log(200), np.log(800))))
        hi = lo * k.uniform(2.0, 4.0)
        a, b = (lo, hi) if up else (hi, lo)
        f = k.fmt(min_rate=3 * hi)
        if i % 10 < 7:
            dur, expo = k.uniform(1.0, 3.0), k.rng.random() < 0.5
            make = sweep if expo else _linear_sweep
            recipe = f"{'exponential' if expo else 'linear'} sweep {a:.0f} -> {b:.0f} Hz over {dur:g} s"
            build: Callable[[int], np.ndarray] = partial(
                lambda r, a, b, d, make: cat(gap(0.2, r), make(a, b, d, r), gap(0.2, r)), a=a, b=b, d=dur, make=make)
            key = k.pick(("sweep", "updown"))
        else:
            m = int(k.rng.integers(3, 6))
            freqs = [round(x) for x in np.geomspace(a, b, m)]
            durs = [k.uniform(0.2, 0.4)] * m
            recipe = "notes " + " then ".join(f"{x} Hz" for x in freqs)
            build = partial(tones, freqs, durs, [0.2] + [0.1] * (m - 1) + [0.2], [0.5] * m)
            key = "updown"
        clip = k.clip(i, f, recipe, build)
        if key == "sweep":
            q = k.q(clip, "", k.ask("sweep"), "rising" if up else "falling", "choice", choices=("rising", "falling"),
                    aliases=UPDOWN)
        else:
            q = k.q(clip, "", k.ask("updown"), "up" if up else "down", "choice", choices=("up", "down"), aliases=UP)
        out.append((clip, [q]))
    return out


def build_loudness(k: Kit, n: int) -> Built:
    out: Built = []
    for i in range(n):
        m = 3 if i % 10 >= 7 else 2
        freq = k.pick((500, 600, 800, 1000, 1200))
        top = k.uniform(-8.0, -2.0, 0.5)
        levels = [top] + [round(top - k.uniform(8.0, 20.0, 0.5), 1) for _ in range(m - 1)]
        levels = [float(x) for x in k.rng.permutation(levels)]
        amps = [10 ** (db / 20) for db in levels]
        durs, gaps = [k.uniform(0.3, 0.5)] * m, [k.uniform(0.2, 0.5) for _ in range(m + 1)]
        two = k.rng.random() < 0.25
        f = k.fmt(channels=2 if two else 1, min_rate=3 * freq)
        build = partial(tones, [freq] * m, durs, gaps, amps)
        if two:
            build = partial(lambda r, b: stereo(b(r), b(r)), b=build)
        clip = k.clip(i, f, f"{freq} Hz beeps at peak " + ", ".join(f"{x:g}" for x in levels) + " dBFS", build)
        choices = FST[:m]
        if m == 3:
            key = "loudest3"
            quiet = "quietest" in WORDINGS[k.bank][key][0]
        else:
            key = k.pick(("louder", "quieter"))
            quiet = key == "quieter"
        answer = choices[int(np.argmin(levels) if quiet else np.argmax(levels))]
        out.append((clip, [k.q(clip, "", k.ask(key), answer, "choice", choices=choices,
                               aliases={c: ORD_ALIASES[c] for c in choices})]))
    return out



def build_silence(k: Kit, n: int) -> Built:
    out: Built = []
    for i in range(n):
        silent = i % 5 < 2
        dur, seed = k.uniform(1.0, 3.5, 0.1), int(k.rng.integers(1 << 30))
        transcript = None
        if silent:
            channels = 2 if k.rng.random() < 0.3 else 1
            f = k.fmt(lossless=True)
            recipe = f"{dur:g} s of digital silence" + (", two channels" if channels == 2 else "")
            build: Callable[[int], np.ndarray] = partial(
                lambda r, d, c: np.zeros((round(d * r), 2)) if c == 2 else gap(d, r), d=dur, c=channels)
        else:
            what = k.pick(("hum", "faint noise", "beep", "quiet speech", "faint tone"))
            f = k.fmt(min_rate=16000)
            recipe = {"hum": f"150 Hz hum at -24 dBFS, {dur:g} s", "faint noise": f"pink noise peaking at -45 dBFS, {dur:g} s",
                      "beep": f"one 1 kHz beep of 0.2 s in {dur:g} s of silence",
                      "faint tone": f"a 440 Hz tone peaking at -40 dBFS, {dur:g} s"}.get(what, "")
            if what == "quiet speech":
                v, text = k.voice(), k.sentence()
                recipe, transcript = f"{voice_name(v)} peaking at -30 dBFS", text
                build = partial(lambda r, v, t: peak_at(said_by(v, t, r), -30.0), v=v, t=text)
            else:
                build = partial(_faint, what=what, dur=dur, seed=seed)
        clip = k.clip(i, f, recipe, build, transcript)
        key = k.pick(("silent_or_sound", "any_sound", "all_silent"))
        if key == "silent_or_sound":
            q = k.q(clip, "", k.ask(key), "silent" if silent else "sound", "choice", choices=("silent", "sound"),
                    aliases=SILENT)
        else:
            yes = silent if key == "all_silent" else not silent
            q = k.q(clip, "", k.ask(key), "yes" if yes else "no", "choice", choices=("yes", "no"), aliases=YES_NO)
        out.append((clip, [q]))
    return out


def _faint(r: int, what: str, dur: float, seed: int) -> np.ndarray:
    if what == "hum":
        return tone(150, dur, r, 10 ** (-24 / 20))
    if what == "faint noise":
        return pink_noise(dur, r, 10 ** (-45 / 20), seed)
    if what == "beep":
        lead = (dur - 0.2) / 2
        return cat(gap(lead, r), tone(1000, 0.2, r), gap(dur - 0.2 - lead, r))
    return tone(440, dur, r, 10 ** (-40 / 20))

