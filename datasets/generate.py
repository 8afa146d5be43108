"""Regenerate the audioqa-v1 dataset: deterministic clips plus manifest.jsonl.

Usage: python datasets/generate.py [OUT_DIR]   (default: datasets/audioqa-v1 next to this file)
Needs Debian espeak-ng, flite and sox (speech and resampling) plus numpy and soundfile. Only needed
to regenerate: the committed files are the dataset, and the loader never runs this.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import numpy as np
import soundfile as sf

from orchestrator.dataset import MANIFEST, Item, probe_audio

NAME = "audioqa-v1"
TOOLS = ("espeak-ng", "flite", "sox")
_SUBTYPE = {"wav": ("WAV", "PCM_16"), "flac": ("FLAC", "PCM_16"), "ogg": ("OGG", "VORBIS"),
            "mp3": ("MP3", "MPEG_LAYER_III")}
_OGG_SERIAL = 0x61715131  # fixed stream serial: libsndfile picks a random one per file


# --- signal building blocks (float64 mono at the clip's rate) ------------------------------------

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


def _clips() -> list[Clip]:
    meeting = "The meeting moved to Thursday at three o'clock."
    folder = "Please bring the blue folder to room fifteen."
    weather = "The weather will be sunny tomorrow."
    morning = "Good morning, everyone."
    rate_s = "We will leave for the station after lunch."
    passage = (
        "Last Tuesday, Maria took the early bus to the harbour. She wanted fresh fish for her "
        "grandmother's birthday dinner. At the market she met her old friend Peter, who was selling "
        "apples and pears. They talked for a while about the rainy weather. Then Maria bought three "
        "kilos of fish and a small bunch of flowers. She paid twenty euros in total and took a taxi home, "
        "because the bus was late."
    )
    c: list[Clip] = [
        # Spoken content and reasoning (flite voices: recognisers transcribe them reliably).
        Clip("meeting", "wav", 16000, "flite kal16", lambda r: said("flite", "kal16", meeting, r), meeting),
        Clip("folder", "flac", 22050, "flite slt", lambda r: said("flite", "slt", folder, r), folder),
        Clip("sister", "mp3", 24000, "flite rms",
             lambda r: said("flite", "rms", "My sister lives in Lisbon and works as a teacher.", r),
             "My sister lives in Lisbon and works as a teacher."),
        Clip("platform", "ogg", 44100, "flite awb",
             lambda r: said("flite", "awb", "The train to the airport leaves from platform seven.", r),
             "The train to the airport leaves from platform seven."),
        Clip("street", "wav", 8000, "flite kal (8 kHz diphone)",
             lambda r: said("flite", "kal", "The bank is next to the bakery on Green Street.", r),
             "The bank is next to the bakery on Green Street."),
        Clip("euros", "flac", 16000, "flite awb",
             lambda r: said("flite", "awb", "I had ten euros and spent four.", r),
             "I had ten euros and spent four."),
        Clip("apples", "wav", 24000, "flite slt",
             lambda r: said("flite", "slt", "There are four boxes, and each box holds three apples.", r),
             "There are four boxes, and each box holds three apples."),
        Clip("ages", "ogg", 16000, "flite rms",
             lambda r: said("flite", "rms", "David is older than Sam, and Sam is older than Tom.", r),
             "David is older than Sam, and Sam is older than Tom."),
        # Counting: 1 kHz beeps, 150 ms on, 250 ms off.
        Clip("beeps-5", "wav", 16000, "5 beeps of 1 kHz, 0.15 s on, 0.25 s off", lambda r: beeps(5, r)),
        Clip("beeps-3", "flac", 48000, "3 beeps of 1 kHz in both channels",
             lambda r: stereo(beeps(3, r), beeps(3, r))),
        Clip("beeps-7", "ogg", 22050, "7 beeps of 1 kHz", lambda r: beeps(7, r)),
        Clip("beeps-2", "mp3", 44100, "2 beeps of 1 kHz", lambda r: beeps(2, r)),
        # Pitch order, frequency, duration.
        Clip("tones-up", "wav", 24000, "440 Hz then 660 Hz, 0.6 s each, 0.3 s apart",
             lambda r: cat(gap(0.2, r), tone(440, 0.6, r), gap(0.3, r), tone(660, 0.6, r), gap(0.2, r))),
        Clip("tones-down", "flac", 44100, "880 Hz then 550 Hz, 0.6 s each, 0.3 s apart",
             lambda r: cat(gap(0.2, r), tone(880, 0.6, r), gap(0.3, r), tone(550, 0.6, r), gap(0.2, r))),
        Clip("tone-1k", "wav", 8000, "1000 Hz for 0.8 s between 0.2 s of silence",
             lambda r: cat(gap(0.2, r), tone(1000, 0.8, r), gap(0.2, r))),
        Clip("tone-250", "ogg", 48000, "250 Hz for 1.5 s between 0.2 s of silence",
             lambda r: cat(gap(0.2, r), tone(250, 1.5, r), gap(0.2, r))),
        Clip("tone-2s5", "flac", 16000, "500 Hz for 2.5 s between 0.25 s of silence",
             lambda r: cat(gap(0.25, r), tone(500, 2.5, r), gap(0.25, r))),
        Clip("short-long", "mp3", 22050, "600 Hz for 0.3 s, 0.4 s gap, 600 Hz for 1.2 s",
             lambda r: cat(gap(0.2, r), tone(600, 0.3, r), gap(0.4, r), tone(600, 1.2, r), gap(0.2, r))),
        # Direction.
        Clip("sweep-up", "wav", 48000, "exponential sweep 300 -> 1200 Hz over 2 s",
             lambda r: cat(gap(0.2, r), sweep(300, 1200, 2.0, r), gap(0.2, r))),
        Clip("sweep-down", "ogg", 24000, "exponential sweep 1500 -> 400 Hz over 2 s",
             lambda r: cat(gap(0.2, r), sweep(1500, 400, 2.0, r), gap(0.2, r))),
        # Loudness: 18 dB apart.
        Clip("louder-second", "wav", 44100, "800 Hz beeps of 0.4 s, -20 dBFS then -2 dBFS, both channels",
             lambda r: stereo(*(2 * [cat(gap(0.3, r), tone(800, 0.4, r, 0.1), gap(0.5, r),
                                         tone(800, 0.4, r, 0.79), gap(0.3, r))]))),
        Clip("louder-first", "ogg", 16000, "800 Hz beeps of 0.4 s, -2 dBFS then -20 dBFS",
             lambda r: cat(gap(0.3, r), tone(800, 0.4, r, 0.79), gap(0.5, r), tone(800, 0.4, r, 0.1),
                           gap(0.3, r))),
        # Speech presence and silence.
        Clip("pink-noise", "flac", 16000, "pink noise, 3 s, seed 7", lambda r: pink_noise(3.0, r, 0.3, seed=7)),
        Clip("library", "mp3", 16000, "flite slt over pink noise (seed 11) 20 dB down",
             lambda r: _over_noise(tts("flite", "slt", "The library closes early on Sundays.", r), r, 11),
             "The library closes early on Sundays."),
        Clip("silent", "wav", 8000, "2 s of digital silence", lambda r: gap(2.0, r)),
        Clip("hum", "flac", 22050, "150 Hz hum at -20 dBFS, 2 s", lambda r: tone(150, 2.0, r, 0.1)),
        # Channel.
        Clip("voice-left", "wav", 44100, "flite kal16 in the left channel only",
             lambda r: _side(tts("flite", "kal16", weather, r), r, left=True), weather),
        Clip("voice-right", "ogg", 48000, "flite slt in the right channel only",
             lambda r: _side(tts("flite", "slt", weather, r), r, left=False), weather),
        Clip("beep-right", "flac", 48000, "one 1 kHz beep of 0.3 s in the right channel only, 0.5 s long",
             lambda r: stereo(gap(0.5, r), cat(gap(0.1, r), tone(1000, 0.3, r), gap(0.1, r)))),
        # Timing.
        Clip("speech-at-1s5", "wav", 16000, "1.5 s of silence, then flite kal16",
             lambda r: cat(gap(1.5, r), tts("flite", "kal16", "Your order is ready for pickup.", r),
                           gap(0.3, r)), "Your order is ready for pickup."),
        Clip("speech-at-0s5", "flac", 24000, "0.5 s of silence, then flite slt",
             lambda r: cat(gap(0.5, r), tts("flite", "slt", "Your order is ready for pickup.", r),
                           gap(0.3, r)), "Your order is ready for pickup."),
        Clip("beep-at-2s", "wav", 22050, "one 1 kHz beep of 0.2 s starting at 2.0 s, 3 s long",
             lambda r: cat(gap(2.0, r), tone(1000, 0.2, r), gap(0.8, r))),
        # Order around an event.
        Clip("words-beep-3", "flac", 22050, "flite kal16 words apple, banana, beep, cherry",
             lambda r: _words(["apple", "banana", None, "cherry"], r), "Apple. Banana. Cherry."),
        Clip("words-beep-2", "wav", 16000, "flite kal16 words apple, beep, banana, cherry",
             lambda r: _words(["apple", None, "banana", "cherry"], r), "Apple. Banana. Cherry."),
        # Speaker sex (median F0: slt at target 200 ~195 Hz, en+f3 -p 70 ~215 Hz; rms ~100 Hz, en+m3 ~90 Hz).
        Clip("female-slt", "wav", 16000, "flite slt (female), mean F0 target 200 Hz",
             lambda r: said("flite", "slt", morning, r, pitch=200), morning),
        Clip("male-rms", "mp3", 22050, "flite rms (male)", lambda r: said("flite", "rms", morning, r), morning),
        Clip("female-espeak", "ogg", 22050, "espeak-ng en+f3 (female), pitch 70",
             lambda r: said("espeak-ng", "en+f3", morning, r, pitch=70), morning),
        Clip("male-espeak", "flac", 22050, "espeak-ng en+m3 (male)",
             lambda r: said("espeak-ng", "en+m3", morning, r), morning),
        # Speaker count.
        Clip("two-speakers", "wav", 16000, "flite slt then flite rms, same sentence, 0.6 s apart",
             lambda r: cat(tts("flite", "slt", weather, r), gap(0.6, r), tts("flite", "rms", weather, r)),
             f"{weather} {weather}"),
        Clip("one-speaker", "flac", 16000, "flite slt twice, same sentence, 0.6 s apart",
             lambda r: cat(tts("flite", "slt", weather, r), gap(0.6, r), tts("flite", "slt", weather, r)),
             f"{weather} {weather}"),
        # Speaking rate (flite duration_stretch 1.6 = slow, 0.7 = fast).
        Clip("slow-fast", "wav", 16000, "flite kal16 stretch 1.6 then 0.7",
             lambda r: cat(tts("flite", "kal16", rate_s, r, stretch=1.6), gap(0.7, r),
                           tts("flite", "kal16", rate_s, r, stretch=0.7)), f"{rate_s} {rate_s}"),
        Clip("fast-slow", "ogg", 24000, "flite kal16 stretch 0.7 then 1.6",
             lambda r: cat(tts("flite", "kal16", rate_s, r, stretch=0.7), gap(0.7, r),
                           tts("flite", "kal16", rate_s, r, stretch=1.6)), f"{rate_s} {rate_s}"),
        # Language (espeak-ng).
        Clip("lang-de", "wav", 22050, "espeak-ng de",
             lambda r: said("espeak-ng", "de", "Guten Morgen. Wie geht es Ihnen heute? Das Wetter ist schön.", r),
             "Guten Morgen. Wie geht es Ihnen heute? Das Wetter ist schön."),
        Clip("lang-es", "mp3", 48000, "espeak-ng es",
             lambda r: said("espeak-ng", "es", "Buenos días. ¿Cómo está usted hoy? Hace muy buen tiempo.", r),
             "Buenos días. ¿Cómo está usted hoy? Hace muy buen tiempo."),
        Clip("lang-fr", "flac", 44100, "espeak-ng fr",
             lambda r: said("espeak-ng", "fr", "Bonjour. Comment allez-vous aujourd'hui? Il fait très beau.", r),
             "Bonjour. Comment allez-vous aujourd'hui? Il fait très beau."),
        # A long passage.
        Clip("passage", "flac", 16000, "flite slt, one paragraph",
             lambda r: cat(gap(0.3, r), tts("flite", "slt", passage, r), gap(0.3, r)), passage),
    ]
    return c


def _over_noise(speech: np.ndarray, rate: int, seed: int) -> np.ndarray:
    x = cat(gap(0.3, rate), speech, gap(0.3, rate))
    return x + pink_noise(len(x) / rate, rate, 0.06, seed)[: len(x)]


def _side(x: np.ndarray, rate: int, left: bool) -> np.ndarray:
    x = cat(gap(0.3, rate), x, gap(0.3, rate))
    return stereo(x, np.zeros_like(x)) if left else stereo(np.zeros_like(x), x)


def _words(words: list[str | None], rate: int) -> np.ndarray:
    parts = [gap(0.3, rate)]
    for w in words:
        parts += [tts("flite", "kal16", w, rate) if w else tone(1000, 0.3, rate), gap(0.5, rate)]
    return cat(*parts)


_SAY = {"first": ["first one", "1st"], "second": ["second one", "2nd"]}
_FS = ("first", "second")
_LR = ("left", "right")
_LANGS = ("english", "german", "spanish", "french", "italian")
_SEX = {"female": ["woman", "girl", "feminine", "lady"], "male": ["man", "boy", "masculine", "gentleman"]}
_UPDOWN = {"rising": ["rises", "rise", "up", "upward", "upwards", "ascending", "increasing"],
           "falling": ["falls", "fall", "down", "downward", "downwards", "descending", "decreasing"]}
_LR_ALIASES = {"left": ["left channel", "left side"], "right": ["right channel", "right side"]}


def _questions() -> list[Q]:
    beeps_q = "How many beeps do you hear?"
    higher = "Two tones play one after the other. Which tone is higher in pitch, the first or the second?"
    freq_q = "What is the frequency of the tone, in hertz?"
    dur_q = "How long does the tone last, in seconds?"
    sweep_q = "Is the pitch of this sweep rising or falling?"
    loud_q = "Which beep is louder, the first or the second?"
    speech_q = "Does this recording contain human speech? Answer yes or no."
    silent_q = "Is this recording silent, or can you hear a sound?"
    voice_ch = "Is the voice in the left channel or the right channel?"
    onset_q = "After how many seconds does the speech start?"
    after_beep = "Which word is spoken right after the beep: apple, banana or cherry?"
    sex_q = "Is the speaker male or female?"
    people_q = "How many different people speak in this recording?"
    rate_q = "The same sentence is spoken twice. Is it spoken faster the first time or the second time?"
    lang_q = "Which language is spoken: English, German, Spanish, French or Italian?"
    yes_no = {"yes": ["contains speech", "there is speech"],
              "no": ["does not", "doesn't", "no speech", "no human speech"]}
    return [
        Q("content-meeting-day", "meeting", "content", "On which day of the week is the meeting?",
          "thursday", "exact", True),
        Q("content-meeting-hour", "meeting", "content", "At what hour is the meeting?", "3", "numeric", True),
        Q("content-folder-colour", "folder", "content", "What colour is the folder?", "blue", "exact", True,
          variants=("blue folder",)),
        Q("content-folder-room", "folder", "content", "To which room number should the folder go?", "15",
          "numeric", True),
        Q("content-sister-job", "sister", "content", "What is the sister's job?", "teacher", "exact", True),
        Q("content-platform", "platform", "content", "Which platform does the train leave from?", "7",
          "numeric", True),
        Q("content-street", "street", "content", "What is the name of the street?", "green", "exact", True,
          variants=("green street",)),
        Q("reasoning-euros-left", "euros", "reasoning", "How many euros are left?", "6", "numeric", True),
        Q("reasoning-apples-total", "apples", "reasoning", "How many apples are there in total?", "12",
          "numeric", True),
        Q("reasoning-youngest", "ages", "reasoning", "Who is the youngest of the three people?", "tom",
          "exact", True),
        Q("count-beeps-5", "beeps-5", "count", beeps_q, "5", "numeric"),
        Q("count-beeps-3", "beeps-3", "count", beeps_q, "3", "numeric"),
        Q("count-beeps-7", "beeps-7", "count", beeps_q, "7", "numeric"),
        Q("count-beeps-2", "beeps-2", "count", beeps_q, "2", "numeric"),
        Q("pitch-higher-up", "tones-up", "pitch", higher, "second", "choice", choices=_FS, aliases=_SAY),
        Q("pitch-lower-up", "tones-up", "pitch",
          "Two tones play one after the other. Which tone is lower in pitch, the first or the second?",
          "first", "choice", choices=_FS, aliases=_SAY),
        Q("pitch-higher-down", "tones-down", "pitch", higher, "first", "choice", choices=_FS, aliases=_SAY),
        Q("frequency-1k", "tone-1k", "frequency", freq_q, "1000", "numeric", tolerance=50),
        Q("frequency-250", "tone-250", "frequency", freq_q, "250", "numeric", tolerance=25),
        Q("duration-0s8", "tone-1k", "duration", dur_q, "0.8", "numeric", tolerance=0.15),
        Q("duration-2s5", "tone-2s5", "duration", dur_q, "2.5", "numeric", tolerance=0.25),
        Q("duration-longer", "short-long", "duration", "Which tone is longer, the first or the second?",
          "second", "choice", choices=_FS, aliases=_SAY),
        Q("direction-up", "sweep-up", "direction", sweep_q, "rising", "choice", choices=("rising", "falling"),
          aliases=_UPDOWN),
        Q("direction-down", "sweep-down", "direction", sweep_q, "falling", "choice",
          choices=("rising", "falling"), aliases=_UPDOWN),
        Q("loudness-second", "louder-second", "loudness", loud_q, "second", "choice", choices=_FS, aliases=_SAY),
        Q("loudness-first", "louder-first", "loudness", loud_q, "first", "choice", choices=_FS, aliases=_SAY),
        Q("speech-noise", "pink-noise", "speech_presence", speech_q, "no", "choice", choices=("yes", "no"),
          aliases=yes_no),
        Q("speech-library", "library", "speech_presence", speech_q, "yes", "choice", True,
          choices=("yes", "no"), aliases=yes_no),
        Q("silence-silent", "silent", "silence", silent_q, "silent", "choice", choices=("silent", "sound"),
          aliases={"silent": ["silence", "nothing", "no sound"], "sound": ["hum", "tone", "noise", "a sound"]}),
        Q("silence-hum", "hum", "silence", silent_q, "sound", "choice", choices=("silent", "sound"),
          aliases={"silent": ["silence", "nothing", "no sound"], "sound": ["hum", "tone", "noise", "a sound"]}),
        Q("channel-voice-left", "voice-left", "channel", voice_ch, "left", "choice", choices=_LR,
          aliases=_LR_ALIASES),
        Q("channel-voice-right", "voice-right", "channel", voice_ch, "right", "choice", choices=_LR,
          aliases=_LR_ALIASES),
        Q("channel-beep-right", "beep-right", "channel", "Is the beep in the left channel or the right channel?",
          "right", "choice", choices=_LR, aliases=_LR_ALIASES),
        Q("timing-speech-1s5", "speech-at-1s5", "timing", onset_q, "1.5", "numeric", tolerance=0.3),
        Q("timing-speech-0s5", "speech-at-0s5", "timing", onset_q, "0.5", "numeric", tolerance=0.3),
        Q("timing-beep-2s", "beep-at-2s", "timing", "How many seconds into the recording does the beep start?",
          "2", "numeric", tolerance=0.3),
        Q("order-after-beep-3", "words-beep-3", "order", after_beep, "cherry", "choice",
          choices=("apple", "banana", "cherry")),
        Q("order-before-beep-3", "words-beep-3", "order",
          "Which word is spoken right before the beep: apple, banana or cherry?", "banana", "choice",
          choices=("apple", "banana", "cherry")),
        Q("order-after-beep-2", "words-beep-2", "order", after_beep, "banana", "choice",
          choices=("apple", "banana", "cherry")),
        Q("sex-female-slt", "female-slt", "speaker_sex", sex_q, "female", "choice", choices=("male", "female"),
          aliases=_SEX),
        Q("sex-male-rms", "male-rms", "speaker_sex", sex_q, "male", "choice", choices=("male", "female"),
          aliases=_SEX),
        Q("sex-female-espeak", "female-espeak", "speaker_sex", sex_q, "female", "choice",
          choices=("male", "female"), aliases=_SEX),
        Q("sex-male-espeak", "male-espeak", "speaker_sex", sex_q, "male", "choice", choices=("male", "female"),
          aliases=_SEX),
        Q("speakers-two", "two-speakers", "speaker_count", people_q, "2", "numeric"),
        Q("speakers-one", "one-speaker", "speaker_count", people_q, "1", "numeric"),
        Q("rate-faster-second", "slow-fast", "speaking_rate", rate_q, "second", "choice", choices=_FS,
          aliases={"first": ["first time"], "second": ["second time"]}),
        Q("rate-faster-first", "fast-slow", "speaking_rate", rate_q, "first", "choice", choices=_FS,
          aliases={"first": ["first time"], "second": ["second time"]}),
        Q("language-de", "lang-de", "language", lang_q, "german", "choice", True, choices=_LANGS,
          aliases={"german": ["deutsch"]}),
        Q("language-es", "lang-es", "language", lang_q, "spanish", "choice", True, choices=_LANGS,
          aliases={"spanish": ["espanol", "castilian"]}),
        Q("language-fr", "lang-fr", "language", lang_q, "french", "choice", True, choices=_LANGS,
          aliases={"french": ["francais"]}),
        Q("passage-day", "passage", "content", "On which day of the week did Maria go to the harbour?",
          "tuesday", "exact", True),
        Q("passage-fish", "passage", "content", "How many kilos of fish did Maria buy?", "3", "numeric", True),
        Q("passage-friend", "passage", "content", "What is the name of the friend Maria met at the market?",
          "peter", "exact", True),
        Q("passage-paid", "passage", "reasoning", "How many euros did Maria pay in total?", "20", "numeric",
          True),
        Q("passage-length", "passage", "duration", "About how many seconds long is this recording?",
          "PASSAGE_SECONDS", "numeric", tolerance=4.0),
    ]


# --- writing ------------------------------------------------------------------------------------

def _ogg_crc(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else crc << 1
            crc &= 0xFFFFFFFF
    return crc


def _fix_ogg_serial(path: Path) -> None:
    """Rewrite every Ogg page with a fixed stream serial and its CRC, so the bytes are reproducible."""
    data = bytearray(path.read_bytes())
    pos = 0
    while pos < len(data):
        if data[pos:pos + 4] != b"OggS":
            raise RuntimeError(f"{path}: no Ogg page at byte {pos}")
        nseg = data[pos + 26]
        end = pos + 27 + nseg + sum(data[pos + 27: pos + 27 + nseg])
        data[pos + 14: pos + 18] = _OGG_SERIAL.to_bytes(4, "little")
        data[pos + 22: pos + 26] = bytes(4)
        data[pos + 22: pos + 26] = _ogg_crc(bytes(data[pos:end])).to_bytes(4, "little")
        pos = end
    path.write_bytes(bytes(data))


def write_clip(path: Path, x: np.ndarray, rate: int, container: str) -> None:
    peak = float(np.max(np.abs(x)))
    if peak > 0.99:
        raise ValueError(f"{path.name}: peak {peak:.3f} would clip")
    fmt, subtype = _SUBTYPE[container]
    # Quantise to int16 here so every container starts from the same PCM.
    pcm = np.round(x * 32767).astype(np.int16)
    sf.write(str(path), pcm, rate, format=fmt, subtype=subtype)
    if container == "ogg":
        _fix_ogg_serial(path)


def generate(out: Path) -> list[Item]:
    """Write every clip and manifest.jsonl into `out` (created; old audio replaced). Blocks."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise SystemExit(f"generate.py: missing tools: {', '.join(missing)} (apt-get install espeak-ng flite sox)")
    audio_dir = out / "audio"
    if audio_dir.exists():
        shutil.rmtree(audio_dir)
    audio_dir.mkdir(parents=True)
    clips = {c.name: c for c in _clips()}
    for clip in clips.values():
        x = clip.build(clip.rate)
        path = audio_dir / f"{clip.name}.{clip.container}"
        write_clip(path, x, clip.rate, clip.container)
    items: list[Item] = []
    for q in _questions():
        clip = clips[q.clip]
        rel = f"audio/{clip.name}.{clip.container}"
        props = probe_audio(out / rel)
        answer = q.answer
        if answer == "PASSAGE_SECONDS":
            answer = f"{round(props.duration_s)}"
        items.append(Item(
            id=q.id, audio=rel, question=q.question, answer=answer, variants=list(q.variants),
            choices=list(q.choices), choice_aliases={k: v for k, v in q.aliases.items() if k in q.choices},
            scoring=q.scoring, tolerance=q.tolerance, kind=q.kind, transcript_answerable=q.transcript_answerable,
            transcript=clip.transcript, recipe=clip.recipe, **msgspec.structs.asdict(props),
        ))
    enc = msgspec.json.Encoder()
    (out / MANIFEST).write_bytes(b"".join(enc.encode(it) + b"\n" for it in items))
    write_card(out, items)
    return items


def _tool_versions() -> dict[str, str]:
    def first_line(cmd: list[str]) -> str:
        out = subprocess.run(cmd, capture_output=True, text=True)
        text = (out.stdout + out.stderr).strip().splitlines()
        return text[0].strip() if text else "unknown"

    flite = first_line(["flite", "--version"])
    flite = next((ln.strip() for ln in subprocess.run(["flite", "--version"], capture_output=True,
                                                      text=True).stdout.splitlines() if "version" in ln), flite)
    return {
        "espeak-ng": first_line(["espeak-ng", "--version"]).split("  Data at")[0],
        "flite": flite,
        "sox": first_line(["sox", "--version"]).removeprefix("sox:").strip(),
        "numpy": np.__version__,
        "soundfile": f"{sf.__version__} (libsndfile {sf.__libsndfile_version__})",
    }


def write_card(out: Path, items: list[Item]) -> None:
    """Write the dataset card README.md: provenance, tools, licence, hashing rule and the item table."""
    n = len(items)
    not_text = sum(not it.transcript_answerable for it in items)
    clips = {it.audio: it for it in items}
    total_s = sum(it.duration_s for it in clips.values())
    total_bytes = sum(it.bytes for it in clips.values())
    lines = [
        f"# {NAME}: a generated audio question-answering set",
        "",
        f"{n} questions over {len(clips)} clips ({total_s:.1f} s, {total_bytes / 1e6:.2f} MB). "
        f"{not_text} of {n} items ({100 * not_text / n:.0f} %) cannot be answered from a transcript: they ask "
        "about counts, pitch, frequency, duration, direction, loudness, speech presence, silence, channels, "
        "timing, order around a beep, speaker sex and count, speaking rate and language.",
        "",
        "## Provenance",
        "Every clip is synthesised by `datasets/generate.py` (run `python datasets/generate.py` to "
        "regenerate; the same tools give the same PCM and the same manifest). Tones, beeps, sweeps and "
        "noise are computed with numpy (noise from a seeded PCG64 generator); speech comes from Debian "
        "`flite` (voices kal, kal16, awb, rms, slt) and `espeak-ng` (en+f3, en+m3, de, es, fr), "
        "resampled by `sox -D ... rate -v` (no dither) and trimmed to the first and last sample above "
        "2 % of the peak, so timing labels are exact. Clips are quantised to 16-bit before encoding; "
        "Ogg files get a fixed stream serial so their bytes are reproducible. No third-party recordings "
        "or datasets are included.",
        "",
        "Tools used for this version:",
        "",
        *[f"- {k}: {v}" for k, v in _tool_versions().items()],
        "",
        "## Licence",
        "Generated by the aqbench project and released under the project's licence (Apache-2.0). The "
        "synthesisers' licences (flite: BSD-style; espeak-ng: GPL-3.0) cover the programs, not the audio "
        "they produce; no recorded voices or third-party data are included.",
        "",
        "## Manifest",
        "`manifest.jsonl` holds one item per line (`orchestrator.dataset.Item`): id, audio (relative path), "
        "question, answer, accepted variants, choices and per-choice aliases, scoring (`exact`, `choice`, "
        "`numeric`) and tolerance, kind, transcript_answerable, transcript (speech clips), recipe, and the "
        "clip's container, codec, sample rate, channels, frames, duration, bytes, sha256 of the file and "
        "`pcm_sha256`: sha256 of the decoded frames as interleaved little-endian int16 "
        "(`soundfile.read(dtype='int16', always_2d=True)`). `aqbench dataset check` verifies all of it.",
        "",
        "## Items",
        "",
        "| id | kind | clip | format | Hz | ch | s | question | answer | scoring | transcript answers? |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for it in items:
        gold = it.answer + (f" ±{it.tolerance:g}" if it.tolerance else "")
        lines.append(f"| {it.id} | {it.kind} | {Path(it.audio).stem} | {it.container} | {it.sample_rate_hz} | "
                     f"{it.channels} | {it.duration_s:.2f} | {it.question} | {gold} | {it.scoring} | "
                     f"{'yes' if it.transcript_answerable else 'no'} |")
    (out / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=str(Path(__file__).resolve().parent / NAME))
    args = parser.parse_args(argv)
    items = generate(Path(args.out))
    print(f"wrote {len(items)} items to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
