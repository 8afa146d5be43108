"""audioqa-v2's recipes: every kind of audioqa-v1, drawn from a seed; the same seed gives the same clips and questions.
Generation-time only; `datasets/generate.py` writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import gen_v2_tones as tones_kinds
import numpy as np
from gen_signals import Clip, Q, cat, chord, gap, pink_noise, stereo, sweep, tone
from gen_v2_banks import (
    FACTS,
    LANGUAGE_SENTENCES,
    ORDER_WORDS,
    PASSAGES,
    REASONING,
    SENTENCES,
    SUBTRACT_VERBS,
    VOCAB,
    number_word,
)
from gen_v2_kit import (
    ESPEAK_EN,
    FEMALE,
    FLITE,
    FS,
    LANG_NAMES,
    LANGS,
    LR,
    MALE,
    SEX,
    SPEECH_YES_NO,
    Built,
    Kit,
    Voice,
    coloured_noise,
    fill,
    listing,
    said_by,
    speak,
    tones,
    voice_name,
)

NAME = "audioqa-v2"
SEED = 2
# Questions per kind in the shipped set (the passages add a few content, reasoning and duration ones).
COUNTS = {"content": 44, "reasoning": 28, "count": 36, "pitch": 24, "frequency": 24, "duration": 22, "direction": 20,
          "loudness": 20, "speech_presence": 24, "silence": 20, "channel": 24, "timing": 24, "order": 20,
          "speaker_sex": 24, "speaker_count": 20, "speaking_rate": 16, "language": 15}


def _speech_presence(k: Kit, n: int) -> Built:
    out: Built = []
    for i in range(n):
        speech = i % 2 == 0
        seed, dur = int(k.rng.integers(1 << 30)), k.uniform(2.0, 4.0)
        f = k.fmt(min_rate=16000)
        transcript = None
        if speech:
            v, text, noisy = k.voice(espeak_share=0.4), k.sentence(), k.rng.random() < 0.5
            speed = k.speed(v[0])
            noise = k.pick(("pink", "white", "brown"))
            snr = k.uniform(12.0, 24.0, 1.0)
            recipe = voice_name(v, speed) + (f" over {noise} noise {snr:g} dB down" if noisy else "")
            transcript = text

            def build(r: int, v: Voice = v, text: str = text, speed: int | None = speed, noisy: bool = noisy,
                      noise: str = noise, snr: float = snr, seed: int = seed) -> np.ndarray:
                x = said_by(v, text, r, speed=speed)
                return x + coloured_noise(noise, len(x) / r, r, 0.6 * 10 ** (-snr / 20), seed)[: len(x)] if noisy else x
            noise_like = noisy
        else:
            what = k.pick(("pink", "white", "brown", "hum", "beeps", "chord", "sweep"))
            noise_like = what in ("pink", "white", "brown")
            recipe = {"hum": "120 Hz hum with two harmonics", "beeps": "three 900 Hz beeps",
                      "chord": "a C major chord (262, 330, 392 Hz)", "sweep": "sweep 400 -> 1600 Hz"}.get(
                what, f"{what} noise, seed {seed}") + f", {dur:g} s"

            def build(r: int, what: str = what, dur: float = dur, seed: int = seed) -> np.ndarray:
                if what in ("pink", "white", "brown"):
                    return coloured_noise(what, dur, r, 0.3, seed)
                if what == "hum":
                    return chord((120.0, 240.0, 360.0), dur, r, 0.3)
                if what == "beeps":
                    return tones([900] * 3, [0.2] * 3, [0.3, 0.3, 0.3, 0.3], [0.5] * 3, r)
                if what == "chord":
                    return chord((262.0, 330.0, 392.0), dur, r, 0.5)
                return cat(gap(0.2, r), sweep(400, 1600, dur, r), gap(0.2, r))
        clip = k.clip(i, f, recipe, build, transcript)
        if noise_like and k.rng.random() < 0.4:
            q = k.q(clip, "", k.ask("speech_or_noise"), "speech" if speech else "noise", "choice",
                    choices=("speech", "noise"), aliases={"speech": ["voice", "talking", "someone speaking"],
                                                          "noise": ["only noise", "just noise"]})
        else:
            q = k.q(clip, "", k.ask("speech"), "yes" if speech else "no", "choice", transcript_answerable=speech,
                    choices=("yes", "no"), aliases=SPEECH_YES_NO)
        out.append((clip, [q]))
    return out



def _channel(k: Kit, n: int) -> Built:
    out: Built = []
    for i in range(n):
        side = "both" if i % 6 == 5 else k.pick(("left", "right"))
        thing = k.pick(("voice", "beep", "voice", "sound"))
        transcript = None
        if thing == "voice":
            v, text = k.voice(), k.sentence()
            speed = k.speed(v[0])
            recipe, transcript = voice_name(v, speed), text
            build: Callable[[int], np.ndarray] = partial(said_by, v, text, speed=speed)
        elif thing == "beep":
            freq = k.pick((600, 800, 1000, 1500))
            recipe = f"two {freq} Hz beeps"
            build = partial(tones, [freq, freq], [0.3, 0.3], [0.2, 0.3, 0.2], [0.5, 0.5])
        else:
            seed = int(k.rng.integers(1 << 30))
            recipe = f"pink noise, seed {seed}"
            build = partial(lambda r, s: pink_noise(1.5, r, 0.4, s), s=seed)
        bleed = k.uniform(-40.0, -25.0, 1.0) if side != "both" and k.rng.random() < 0.3 else None
        recipe += {"both": ", in both channels", "left": ", left channel", "right": ", right channel"}[side]
        recipe += f" (the other {bleed:g} dB down)" if bleed is not None else ""
        build = partial(_place, build=build, side=side, bleed=bleed)
        clip = k.clip(i, k.fmt(channels=2, min_rate=16000), recipe, build, transcript)
        word = {"voice": k.pick(("voice", "speech", "speaker")), "beep": k.pick(("beep", "tone")),
                "sound": "sound"}[thing]
        if side == "both":
            q = k.q(clip, "", k.ask("channel3", thing=word), "both", "choice", choices=("left", "right", "both"),
                    aliases=LR)
        else:
            q = k.q(clip, "", k.ask("channel", thing=word), side, "choice", choices=("left", "right"),
                    aliases={s: LR[s] for s in ("left", "right")})
        out.append((clip, [q]))
    return out


def _place(r: int, build: Callable[[int], np.ndarray], side: str, bleed: float | None) -> np.ndarray:
    x = build(r)
    other = x * 10 ** (bleed / 20) if bleed is not None else np.zeros_like(x)
    return stereo(x, x) if side == "both" else stereo(x, other) if side == "left" else stereo(other, x)


def _timing(k: Kit, n: int) -> Built:
    out: Built = []
    for i in range(n):
        transcript = None
        if i % 12 < 7:
            start, tail = k.uniform(0.3, 3.0, 0.05), k.uniform(0.3, 0.8)
            v, text = k.voice(espeak_share=0.3), k.sentence()
            speed = k.speed(v[0])
            recipe, transcript = f"{start:g} s of silence, then {voice_name(v, speed)}", text
            build: Callable[[int], np.ndarray] = partial(
                lambda r, s, t, v, x, sp: cat(gap(s, r), speak(v, x, r, speed=sp), gap(t, r)),
                s=start, t=tail, v=v, x=text, sp=speed)
            key = "onset_speech"
        else:
            start, freq = k.uniform(0.4, 3.5, 0.05), k.pick((600, 800, 1000, 1200))
            d, tail = k.uniform(0.15, 0.4), k.uniform(0.3, 1.0)
            recipe = f"one {freq} Hz beep of {d:g} s starting at {start:g} s"
            build = partial(tones, [freq], [d], [start, tail], [0.5])
            key = "onset_beep"
        clip = k.clip(i, k.fmt(min_rate=16000), recipe, build, transcript)
        out.append((clip, [k.q(clip, "", k.ask(key), f"{start:g}", "numeric", tolerance=0.3)]))
    return out


def _words(v: Voice, words: Sequence[str | None], rate: int, pause: float) -> np.ndarray:
    parts = [gap(0.3, rate)]
    for w in words:
        parts += [speak(v, w, rate) if w else tone(1000, 0.3, rate), gap(pause, rate)]
    return cat(*parts)


def _order(k: Kit, n: int) -> Built:
    out: Built = []
    for i in range(n):
        m = 3 if k.rng.random() < 0.6 else 4
        words = [str(w) for w in k.rng.choice(ORDER_WORDS[k.bank], m, replace=False)]
        at = int(k.rng.integers(1, m))  # the beep goes before words[at]
        seq: list[str | None] = [*words[:at], None, *words[at:]]
        v = ("flite", k.pick(FLITE), None)
        pause = k.uniform(0.4, 0.6)
        clip = k.clip(i, k.fmt(min_rate=16000), f"{voice_name(v)} words " + ", ".join(w or "beep" for w in seq),
                      partial(_words, v, seq, pause=pause), ". ".join(w.title() for w in words) + ".")
        after = k.rng.random() < 0.5
        q = k.q(clip, "", k.ask("after" if after else "before", choices=listing(words)),
                words[at] if after else words[at - 1], "choice", choices=tuple(words))
        out.append((clip, [q]))
    return out



def _speaker_sex(k: Kit, n: int) -> Built:
    out: Built = []
    for i in range(n):
        female = i % 2 == 0
        v: Voice = k.pick(FEMALE if female else MALE)
        text, speed = k.sentence(), k.speed(v[0])
        clip = k.clip(i, k.fmt(min_rate=16000), f"{voice_name(v, speed)} ({'female' if female else 'male'})",
                      partial(said_by, v, text, speed=speed), text)
        out.append((clip, [k.q(clip, "", k.ask("sex"), "female" if female else "male", "choice",
                               choices=("male", "female"), aliases=SEX)]))
    return out


def _speaker_count(k: Kit, n: int) -> Built:
    out: Built = []
    for i in range(n):
        two = i % 2 == 1
        a: Voice = k.pick(FEMALE + MALE)
        b: Voice = k.pick(MALE if a in FEMALE else FEMALE) if two else a
        m = int(k.rng.integers(2, 4))
        voices = [a, b, a][:m] if two else [a] * m
        texts = [str(t) for t in k.rng.choice(SENTENCES[k.bank], m, replace=False)]
        pause = k.uniform(0.4, 0.8)

        def build(r: int, voices: list[Voice] = voices, texts: list[str] = texts, pause: float = pause) -> np.ndarray:
            parts = [gap(0.3, r)]
            for v, t in zip(voices, texts, strict=True):
                parts += [speak(v, t, r), gap(pause, r)]
            return cat(*parts)

        recipe = ", then ".join(voice_name(v) for v in voices) + f", {pause:g} s apart"
        clip = k.clip(i, k.fmt(min_rate=16000), recipe, build, " ".join(texts))
        out.append((clip, [k.q(clip, "", k.ask("people"), "2" if two else "1", "numeric")]))
    return out


def _speaking_rate(k: Kit, n: int) -> Built:
    out: Built = []
    for i in range(n):
        text = k.sentence()
        fast_first = k.rng.random() < 0.5
        if k.rng.random() < 0.6:
            v: Voice = ("flite", k.pick(FLITE), None)
            slow, fast = k.uniform(1.5, 1.8), k.uniform(0.6, 0.75)
            renditions = [dict(stretch=fast), dict(stretch=slow)]
            what = f"{voice_name(v)} duration stretch {fast:g} and {slow:g}"
        else:
            v = ("espeak-ng", k.pick(ESPEAK_EN), int(k.rng.integers(35, 65)))
            slow_s, fast_s = int(k.rng.integers(95, 121)), int(k.rng.integers(210, 251))
            renditions = [dict(speed=fast_s), dict(speed=slow_s)]
            what = f"{voice_name(v)} at speed {fast_s} and {slow_s}"
        if not fast_first:
            renditions.reverse()
        pause = k.uniform(0.6, 1.0)
        build = partial(lambda r, v, t, rs, p: cat(gap(0.3, r), speak(v, t, r, **rs[0]), gap(p, r),
                                                     speak(v, t, r, **rs[1]), gap(0.3, r)),
                        v=v, t=text, rs=renditions, p=pause)
        clip = k.clip(i, k.fmt(min_rate=16000), f"{what}, {'fast' if fast_first else 'slow'} first", build,
                      f"{text} {text}")
        key = k.pick(("faster", "faster", "slower"))
        answer = ("first" if fast_first else "second") if key == "faster" else ("second" if fast_first else "first")
        out.append((clip, [k.q(clip, "", k.ask(key), answer, "choice", choices=FS,
                               aliases={"first": ["first time", "first one"], "second": ["second time", "second one"]})]))
    return out


def _language(k: Kit, n: int) -> Built:
    out: Built = []
    langs = ["en", "de", "es", "fr", "it"]
    for i in range(n):
        lang = langs[i % len(langs)]
        text = k.pick(LANGUAGE_SENTENCES[k.bank][lang])
        if lang == "en" and k.rng.random() < 0.5:
            v: Voice = ("flite", k.pick(FLITE), None)
        else:
            v = ("espeak-ng", lang if lang != "en" else k.pick(("en-us", "en")), int(k.rng.integers(35, 65)))
        speed = k.speed(v[0])
        clip = k.clip(i, k.fmt(min_rate=16000), voice_name(v, speed), partial(said_by, v, text, speed=speed), text)
        out.append((clip, [k.q(clip, "", k.ask("language"), LANG_NAMES[lang], "choice", transcript_answerable=True, choices=LANGS,
                               aliases={"german": ["deutsch"], "spanish": ["espanol", "castilian"],
                                        "french": ["francais"], "italian": ["italiano"]})]))
    return out


# --- speech content and reasoning ------------------------------------------------------------------

def _content(k: Kit, n: int) -> Built:
    out: Built = []
    facts = FACTS[k.bank]
    order = k.rng.permutation(len(facts))
    made, i = 0, 0
    while made < n:
        fact = facts[int(order[i % len(facts)])]
        values = {slot: k.pick(vocab) for slot, vocab in VOCAB.items()}
        said_values = {s: (v.title() if s in ("name", "surname", "city", "street", "day", "month") else v)
                       for s, v in values.items()}
        for slot, lo, hi in fact.numbers:
            num = int(k.rng.integers(lo, hi + 1))
            values[slot], said_values[slot] = str(num), number_word(num)
        text = fill(fact.text, said_values)
        v = k.voice(espeak_share=0.2)
        speed = k.speed(v[0])
        f = k.fmt(min_rate=16000) if v[1] != "kal" else ("wav", 8000)
        clip = k.clip(i, f, voice_name(v, speed), partial(said_by, v, text, speed=speed), text)
        qs = []
        for a in fact.asks[: n - made]:
            question = k.pick(a.wordings).format(**said_values)
            qs.append(k.q(clip, f"-{a.slot}" if len(fact.asks) > 1 else "", question, values[a.slot], a.scoring,
                          transcript_answerable=True, variants=tuple(x.format(**values) for x in a.variants)))
            made += 1
        out.append((clip, qs))
        i += 1
    return out


def _reasoning(k: Kit, n: int) -> Built:
    out: Built = []
    templates = REASONING[k.bank]
    for i in range(n):
        text, wordings, rule = templates[i % len(templates)]
        names = [str(x).title() for x in k.rng.choice(VOCAB["name"], 3, replace=False)]
        things = k.pick(VOCAB["things"])
        if rule == "a*b":
            a, b = int(k.rng.integers(2, 10)), int(k.rng.integers(2, 10))
        elif rule == "a+b":
            a, b = int(k.rng.integers(2, 16)), int(k.rng.integers(2, 13))
        else:
            a = int(k.rng.integers(6, 21))
            b = int(k.rng.integers(2, a - 1))
        slots = {"a": number_word(a), "b": number_word(b), "things": things, "name": names[0], "A": names[0],
                 "B": names[1], "C": names[2], "sub": k.pick(SUBTRACT_VERBS)}
        sentence = fill(text, slots)
        question = k.pick(wordings).format(**slots)
        if rule == "chain":
            # Highest to lowest in the property the sentence compares (age or height).
            ranked = [names[0], names[1], names[2]] if "older" in text or "taller" in text else \
                [names[1], names[0], names[2]]
            low = any(w in question for w in ("youngest", "shortest"))
            answer, scoring = ranked[-1 if low else 0].lower(), "exact"
        else:
            answer, scoring = str(a - b if rule == "a-b" else a * b if rule == "a*b" else a + b), "numeric"
        v = k.voice(espeak_share=0.15)
        speed = k.speed(v[0])
        clip = k.clip(i, k.fmt(min_rate=16000), voice_name(v, speed), partial(said_by, v, sentence, speed=speed), sentence)
        out.append((clip, [k.q(clip, "", question, answer, scoring, transcript_answerable=True)]))
    return out


def _passages(k: Kit) -> Built:
    out: Built = []
    for i, (text, asks) in enumerate(PASSAGES[k.bank]):
        v = ("flite", k.pick(("slt", "kal16", "awb")), None)
        clip = k.clip(i, k.fmt(min_rate=16000), f"{voice_name(v)}, one paragraph", partial(said_by, v, text), text)
        qs = [Q(f"{clip.name}-{j}", clip.name, kind, question, answer, scoring, True)
              for j, (kind, scoring, question, answer) in enumerate(asks)]
        qs.append(Q(f"{clip.name}-length", clip.name, "duration", k.ask("length"), "CLIP_SECONDS", "numeric",
                    tolerance=2.0))
        out.append((clip, qs))
    return out



# Manifest order: the kinds a transcript cannot answer first, so that the capability probe's first
# conditioning pairs (same clip: pitch; same question: count) test the audio itself.
_BUILDERS: dict[str, Callable[[Kit, int], Built]] = {
    "count": tones_kinds.build_count, "pitch": tones_kinds.build_pitch, "frequency": tones_kinds.build_frequency,
    "duration": tones_kinds.build_duration, "direction": tones_kinds.build_direction,
    "loudness": tones_kinds.build_loudness, "silence": tones_kinds.build_silence,
    "speech_presence": _speech_presence, "channel": _channel, "timing": _timing, "order": _order,
    "speaker_sex": _speaker_sex, "speaker_count": _speaker_count, "speaking_rate": _speaking_rate,
    "language": _language, "content": _content, "reasoning": _reasoning,
}




# A seed draws counts, frequencies, durations, orders, channels, voices, sentences and question wordings.
# `heldout=True` draws from the held-out banks (other sentences, words and wordings, gen_v2_banks.py), so a set made
# with another seed and the held-out banks tests what the reference engine never saw.
def recipes(seed: int = SEED, *, heldout: bool = False, per_kind: int | None = None) -> tuple[list[Clip], list[Q]]:
    """The clips and questions of one draw: COUNTS per kind (at most `per_kind` each), then the passages."""
    clips: list[Clip] = []
    questions: list[Q] = []
    built: Built = []
    for kind, builder in _BUILDERS.items():
        built += builder(Kit(seed, heldout, kind), min(COUNTS[kind], per_kind or COUNTS[kind]))
    built += _passages(Kit(seed, heldout, "passage"))
    for clip, qs in built:
        clips.append(clip)
        questions += qs
    return clips, questions
