"""Map a question, by its words, to the analysis that answers it (paraphrase-tolerant keyword rules).

Sees only the question text; knows nothing about audio, clips or any dataset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

__all__ = ["Kind", "Route", "LANGUAGES", "TONE_WORDS", "route", "words_of"]


class Kind(str, Enum):  # noqa: UP042 - str(Kind.X) is 'Kind.X' here, which StrEnum would change
    """The analyses the engine can run; UNSUPPORTED means the engine says it cannot answer."""

    COUNT_TONES = "count_tones"
    SPEAKER_COUNT = "speaker_count"
    PITCH_COMPARE = "pitch_compare"
    FREQUENCY = "frequency"
    DURATION = "duration"
    SWEEP = "sweep"
    LOUDNESS = "loudness"
    SPEECH_PRESENCE = "speech_presence"
    SILENCE = "silence"
    CHANNEL = "channel"
    ONSET = "onset"  # when speech (or the first tone) starts
    WORD_AROUND_TONE = "word_around_tone"
    SPEAKER_SEX = "speaker_sex"
    SPEAKING_RATE = "speaking_rate"
    LANGUAGE = "language"
    SPOKEN_NUMBER = "spoken_number"  # a count or sum taken from what is said (maybe with arithmetic)
    SPOKEN_CONTENT = "spoken_content"
    UNSUPPORTED = "unsupported"


LANGUAGES = ("english", "german", "spanish", "french", "italian", "portuguese", "dutch", "russian",
             "chinese", "japanese", "polish", "swedish", "turkish", "hindi", "arabic", "korean")


@dataclass(frozen=True, slots=True)
class Route:
    """The analysis to run and what the question itself offers (its choices, its polarity)."""

    kind: Kind
    words: tuple[str, ...]
    choices: tuple[str, ...] = field(default=())
    lowest: bool = False  # "which is lower / quieter / slower": pick the minimum instead


TONE_WORDS = _TONE = {"beep", "beeps", "tone", "tones", "click", "clicks", "pulse", "pulses", "chirp", "chirps",
         "ding", "dings", "bleep", "bleeps", "blip", "blips", "ping", "pings", "note", "notes",
         "signal", "signals", "sound", "sounds", "pip", "pips", "chime", "chimes", "buzz", "buzzes"}
_SPEECH = {"speech", "speak", "speaks", "speaking", "spoken", "speaker", "talk", "talking", "talks",
           "voice", "voices", "words", "word", "someone", "somebody", "anyone", "anybody", "person",
           "human", "say", "says", "saying", "said", "sentence", "utterance"}
_PEOPLE = {"people", "speakers", "voices", "persons", "talkers", "individuals", "different"}
# Units of time and of frequency: "how many seconds / hertz" asks for a measure, never for a count of tones.
_UNITS = {"second", "seconds", "millisecond", "milliseconds", "ms", "minute", "minutes", "hz", "hertz"}
_LOW_PITCH = ("lower", "lowest", "deeper", "deepest")
_QUIET = ("quieter", "quietest", "softer", "softest", "softly", "quietly", "weaker", "weakest", "fainter",
          "faintest", "less loud")


def words_of(text: str) -> tuple[str, ...]:
    """Lower-case word tokens (letters, digits, apostrophes)."""
    return tuple(re.findall(r"[a-z0-9']+", text.lower()))


_ARTICLES = {"the", "a", "an"}


def _strip_articles(tokens: list[str]) -> list[str]:
    return [t for t in tokens if t not in _ARTICLES]


def _choices(text: str) -> tuple[str, ...]:
    """Options offered as "A or B" / "A, B or C" at the end of the question, articles dropped.

    "faster the first time or the second time" gives ("first time", "second time"): the option
    before "or" is aligned in length with the one after it.
    """
    # Options offered after a colon are the options ("Which word ...: apple, banana or cherry?"); the words
    # before it never are.
    text = text.rsplit(":", 1)[-1] if ":" in text else text
    m = re.search(r"^(.*)\bor\b([^,:;]+?)[\s?.!]*$", text.lower())
    if not m:
        return ()
    last = _strip_articles(re.findall(r"[a-z0-9']+", m.group(2)))
    if not last:
        return ()
    segments = [seg for seg in re.split(r"[,:;]", m.group(1)) if seg.strip()]
    if not segments:
        return ()
    before = _strip_articles(re.findall(r"[a-z0-9']+", segments[-1]))[-len(last):]
    options = [" ".join(before), " ".join(last)]
    # Earlier short comma-separated segments are more options ("English, German, Spanish or French").
    for seg in reversed(segments[:-1]):
        tokens = _strip_articles(re.findall(r"[a-z0-9']+", seg))
        if not tokens or len(tokens) > len(last) + 1:
            tokens = tokens[-len(last):] if len(segments) > 2 and tokens else []
            if tokens:
                options.insert(0, " ".join(tokens))
            break
        options.insert(0, " ".join(tokens))
    return tuple(dict.fromkeys(o for o in options if o))


@dataclass(frozen=True, slots=True)
class _Words:
    """A question's words, as a sequence, a set and one spaced string, for the rules below."""

    w: tuple[str, ...]
    ws: frozenset[str]
    text: str

    def has(self, *needles: str) -> bool:
        return any((" " in n and f" {n} " in f" {self.text} ") or n in self.ws for n in needles)


# A rule's answer: the analysis and whether the question asks for the minimum; None lets the next rule decide.
_Pick = tuple[Kind, bool] | None


def _about_speakers(q: _Words) -> _Pick:
    """Languages, speakers' sex and number, who said it, how fast."""
    has, w, ws = q.has, q.w, q.ws
    if has("language", "languages") or len(ws & set(LANGUAGES)) >= 2:
        return Kind.LANGUAGE, False
    if has("male", "female", "man", "woman", "gender", "sex", "boy", "girl"):
        return Kind.SPEAKER_SEX, False
    if has("how many") and ws & _PEOPLE and not ws & {"beep", "beeps", "tone", "tones"}:
        return Kind.SPEAKER_COUNT, False
    # "Who is the youngest / shortest?" asks about what is said, whatever comparative it uses.
    if w[:1] and w[0] in {"who", "whom", "whose"}:
        return Kind.SPOKEN_CONTENT, False
    if has("faster", "slower", "quicker", "speed", "rate", "tempo", "fast", "slowly", "quickly"):
        return Kind.SPEAKING_RATE, has("slower", "slowly", "slowest")
    if ws & _TONE and ws & {"word", "words", "said", "spoken", "say", "says"} and has("after the", "before the", "follows", "following", "precedes", "preceding",
                          "right after", "just after", "right before", "just before"):
        return Kind.WORD_AROUND_TONE, has("before", "precedes", "preceding")
    return None


def _about_signal(q: _Words) -> _Pick:
    """Channels, sweeps, loudness, pitch, frequency, onsets, counts of tones."""
    has, ws = q.has, q.ws
    # "left" alone is ambiguous ("how many are left?"): ask for a channel word or both sides.
    if has("channel", "channels", "ear", "ears", "stereo", "side", "sides") \
            or (has("left") and has("right")):
        return Kind.CHANNEL, False
    if has("rising", "falling", "rise", "fall", "sweep", "ascending", "descending", "upward",
           "downward", "go up", "go down", "goes up", "goes down", "direction", "increase", "decrease",
           "climb", "climbs", "drop", "drops", "ascend", "descend", "move up", "move down", "moves up",
           "moves down"):
        return Kind.SWEEP, False
    if has("louder", "loudest", "volume", "loud", "stronger", "strongest", *_QUIET):
        return Kind.LOUDNESS, has(*_QUIET)
    if has("higher", "highest", *_LOW_PITCH) and has("pitch", "tone", "tones", "note", "notes", "beep", "beeps",
                                                      "first", "second", "sound"):
        return Kind.PITCH_COMPARE, has(*_LOW_PITCH)
    if has("frequency", "hz", "hertz", "pitch"):
        return Kind.FREQUENCY, False
    if (ws & _SPEECH or ws & _TONE) and has("start", "starts", "begin", "begins", "onset", "appear",
                                             "appears", "come in", "comes in") \
            and has("when", "how many seconds", "how long", "at what time", "after how many",
                    "how much time", "what time", "seconds", "which second", "what second", "at which"):
        return Kind.ONSET, False
    if has("how many", "count", "number of") and ws & _TONE and not ws & _UNITS:
        return Kind.COUNT_TONES, False
    return None


def _about_content(q: _Words) -> _Pick:
    """Durations, silence, whether there is speech, and what was said."""
    has, w, ws = q.has, q.w, q.ws
    if has("how long", "duration", "how many seconds", "how many milliseconds", "length", "last",
           "lasts", "longer", "shorter", "longest", "shortest", "briefer", "briefest"):
        return Kind.DURATION, False
    if has("silent", "silence", "quiet", "empty", "any sound", "anything", "audible", "blank"):
        return Kind.SILENCE, False
    if ws & _SPEECH and ((w[:1] and w[0] in {"is", "are", "does", "do", "can", "was", "did", "has"})
                         or has("or noise", "or music", "or not", "any speech", "contain",
                                "contains", "present")) and not has("what", "which word", "who"):
        return Kind.SPEECH_PRESENCE, False
    if has("how many", "how much", "what is the total", "what's the total", "sum", "altogether"):
        return Kind.SPOKEN_NUMBER, False
    if has("what", "which", "who", "where", "when", "whom", "whose", "why", "how", "name", "tell",
           "is", "does", "did", "do", "are"):
        return Kind.SPOKEN_CONTENT, False
    return None


def route(question: str) -> Route:
    """Choose the analysis for `question` (pure, fast, deterministic): the first rule that matches, in order."""
    w = words_of(question)
    q = _Words(w=w, ws=frozenset(w), text=" ".join(w))
    pick = _about_speakers(q) or _about_signal(q) or _about_content(q) or (Kind.UNSUPPORTED, False)
    return Route(kind=pick[0], words=w, choices=_choices(question), lowest=pick[1])
