"""audioqa-v2's generation kit: one kind's seeded draws, voices, formats and the answer aliases it shares.

Generation-time only (gen_v2.py and gen_v2_tones.py build the kinds with it).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

import numpy as np
from gen_signals import Clip, Q, brown_noise, cat, gap, pink_noise, tone, tts, white_noise
from gen_v2_banks import SENTENCES, WORDINGS

FS = ("first", "second")
FST = ("first", "second", "third")
ORD_ALIASES = {"first": ["first one", "1st", "first tone", "first beep"],
                "second": ["second one", "2nd", "second tone", "second beep"],
                "third": ["third one", "3rd", "third tone", "third beep"]}
UPDOWN = {"rising": ["rises", "rise", "up", "upward", "upwards", "ascending", "increasing"],
           "falling": ["falls", "fall", "down", "downward", "downwards", "descending", "decreasing"]}
UP = {"up": ["upward", "upwards", "rising", "rises", "ascending", "higher"],
       "down": ["downward", "downwards", "falling", "falls", "descending", "lower"]}
YES_NO = {"yes": ["there is", "it does", "it is"], "no": ["there is not", "there isn't", "does not", "doesn't",
                                                           "it is not"]}
SPEECH_YES_NO = {"yes": ["contains speech", "there is speech", "someone is speaking"],
                  "no": ["does not", "doesn't", "no speech", "no human speech", "nobody", "no one"]}
SILENT = {"silent": ["silence", "nothing", "no sound"], "sound": ["hum", "tone", "noise", "a sound", "beep", "voice"]}
LR = {"left": ["left channel", "left side", "left ear"], "right": ["right channel", "right side", "right ear"],
       "both": ["both channels", "both sides", "center", "centre"]}
SEX = {"female": ["woman", "girl", "feminine", "lady"], "male": ["man", "boy", "masculine", "gentleman"]}
LANGS = ("english", "german", "spanish", "french", "italian")
LANG_NAMES = {"de": "german", "es": "spanish", "fr": "french", "it": "italian", "en": "english"}

# Voices: flite's four clear ones (kal, the 8 kHz diphone voice, only where it was asked for), and espeak-ng
# English variants. Measured median F0: slt ~167 Hz, awb ~124, rms ~100, kal16 ~89; espeak f1-f5 172-200,
# m1-m7 90-103.
FLITE = ("kal16", "slt", "awb", "rms")
ESPEAK_EN = ("en-us", "en", "en-gb-scotland", "en+f3", "en+m3", "en+f2", "en+m1", "en-us+f4", "en+m5")
FEMALE = (("flite", "slt", 200), ("flite", "slt", 185), ("flite", "slt", 215), ("espeak-ng", "en+f1", 55),
           ("espeak-ng", "en+f2", 50), ("espeak-ng", "en+f3", 65), ("espeak-ng", "en+f4", 55),
           ("espeak-ng", "en+f5", 50), ("espeak-ng", "en-us+f2", 60), ("espeak-ng", "en+Annie", 50),
           ("espeak-ng", "en+Andrea", 45), ("espeak-ng", "en+steph", 55))
MALE = (("flite", "rms", None), ("flite", "kal16", None), ("flite", "awb", None), ("espeak-ng", "en+m1", 40),
         ("espeak-ng", "en+m2", 45), ("espeak-ng", "en+m3", 50), ("espeak-ng", "en+m4", 40),
         ("espeak-ng", "en+m6", 45), ("espeak-ng", "en+m7", 40), ("espeak-ng", "en-us", 40),
         ("espeak-ng", "en+john", 45), ("espeak-ng", "en+michael", 45))
MONO = (("flac", 16000), ("flac", 22050), ("ogg", 16000), ("ogg", 22050), ("ogg", 44100), ("ogg", 48000),
         ("mp3", 16000), ("mp3", 22050), ("mp3", 24000), ("mp3", 44100), ("wav", 8000), ("wav", 16000),
         ("flac", 24000), ("flac", 44100))
# No stereo MP3: libsndfile's encoder leaks a one-sided signal into the other channel 8 dB down.
STEREO = (("flac", 22050), ("ogg", 44100), ("ogg", 48000), ("ogg", 22050), ("flac", 48000), ("wav", 16000))
LOSSLESS = (("wav", 8000), ("wav", 16000), ("flac", 16000), ("flac", 22050), ("flac", 44100))

Voice = tuple[str, str, int | None]  # engine, voice, pitch (flite: mean F0 target in Hz; espeak-ng: 0-99)
Built = list[tuple[Clip, list[Q]]]


class Kit:
    """One kind's random draws (seeded by the set's seed and the kind's name) and its banks."""

    def __init__(self, seed: int, heldout: bool, kind: str) -> None:
        self.rng = np.random.default_rng([seed, zlib.crc32(kind.encode())])
        self.bank = "heldout" if heldout else "shipped"
        self.kind = kind
        self.prefix = kind.replace("_", "-")

    def pick(self, seq: Sequence):  # type: ignore[no-untyped-def]
        return seq[int(self.rng.integers(len(seq)))]

    def uniform(self, lo: float, hi: float, step: float = 0.01) -> float:
        return round(float(self.rng.uniform(lo, hi)) / step) * step

    def ask(self, key: str, **slots: str) -> str:
        return self.pick(WORDINGS[self.bank][key]).format(**slots)

    def fmt(self, *, channels: int = 1, min_rate: int = 8000, lossless: bool = False) -> tuple[str, int]:
        pool = LOSSLESS if lossless else STEREO if channels == 2 else MONO
        pool = tuple(f for f in pool if f[1] >= min_rate) or ((pool[0][0], 48000),)
        return self.pick(pool)

    def voice(self, *, espeak_share: float = 0.3) -> Voice:
        if self.rng.random() < espeak_share:
            return "espeak-ng", self.pick(ESPEAK_EN), int(self.rng.integers(35, 65))
        return "flite", self.pick(FLITE), None

    def speed(self, engine: str) -> int | None:
        return int(self.rng.integers(140, 176)) if engine == "espeak-ng" else None

    def sentence(self) -> str:
        return self.pick(SENTENCES[self.bank])

    def clip(self, i: int, rate_fmt: tuple[str, int], recipe: str, build: Callable[[int], np.ndarray],
             transcript: str | None = None) -> Clip:
        return Clip(f"{self.prefix}-{i:03d}", rate_fmt[0], rate_fmt[1], recipe, build, transcript)

    def q(self, clip: Clip, suffix: str, question: str, answer: str, scoring: str, **kw) -> Q:  # type: ignore[no-untyped-def]
        return Q(f"{clip.name}{suffix}", clip.name, self.kind, question, answer, scoring, **kw)


def speak(v: Voice, text: str, rate: int, speed: int | None = None, stretch: float | None = None) -> np.ndarray:
    engine, name, pitch = v
    return tts(engine, name, text, rate, stretch=stretch, speed=speed, pitch=pitch)


def voice_name(v: Voice, speed: int | None = None) -> str:
    engine, name, pitch = v
    extra = "" if pitch is None else (f" F0 target {pitch} Hz" if engine == "flite" else f" pitch {pitch}")
    return f"{engine} {name}{extra}" + (f" speed {speed}" if speed else "")


def fill(text: str, values: dict[str, str]) -> str:
    out = text.format(**values)
    return out[0].upper() + out[1:]


def listing(words: Sequence[str]) -> str:
    return ", ".join(words[:-1]) + f" or {words[-1]}"



def said_by(v: Voice, text: str, rate: int, speed: int | None = None) -> np.ndarray:
    return cat(gap(0.3, rate), speak(v, text, rate, speed=speed), gap(0.3, rate))



def tones(freqs: Sequence[float], durs: Sequence[float], gaps: Sequence[float], amps: Sequence[float],
           rate: int) -> np.ndarray:
    parts = [gap(gaps[0], rate)]
    for f, d, g, a in zip(freqs, durs, gaps[1:], amps, strict=True):
        parts += [tone(f, d, rate, a), gap(g, rate)]
    return cat(*parts)



def coloured_noise(kind: str, seconds: float, rate: int, amp: float, seed: int) -> np.ndarray:
    make = {"pink": pink_noise, "white": white_noise, "brown": brown_noise}[kind]
    return make(seconds, rate, amp, seed)

