"""The reference audio-QA engine: route the question, run the analysis it needs, phrase the answer.
Blocking (VAD, ASR, numpy): call `answer` from a worker thread. Answers only from the audio and the
question; it never sees a dataset, a file name or a hash. Same input -> same answer."""

from __future__ import annotations

import difflib
import hashlib
import io
import re
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import soundfile as sf

from adapters.media import SUPPORTED_FORMATS, DecodedAudio, decode_audio, encode_wav, resample, to_mono
from adapters.reference import dsp, textqa
from adapters.reference.asr import ASR_RATE_HZ, Recognizer
from adapters.reference.router import Kind, Route, route
from adapters.reference.vad import SpeechSegment, load_vad, speech_segments

__all__ = ["ENGINE_NAME", "EngineAnswer", "Engine", "NO_SPEECH_MODELS_ANSWER", "UNSUPPORTED_ANSWER", "WARM_UP_QUESTIONS"]

ENGINE_NAME = "aqbench-reference-cascade"
UNSUPPORTED_ANSWER = (
    "I cannot answer this question from the audio: this reference engine answers questions about "
    "what is said, beeps and tones (count, pitch, frequency, duration, direction, loudness), speech "
    "presence, silence, channel, speech timing, speaker sex and count, speaking rate and language.")
NO_SPEECH_MODELS_ANSWER = (
    "I cannot answer this question: this reference server runs without its speech models (--no-speech-models), "
    "so it answers questions about beeps and tones (count, pitch, frequency, duration, direction, loudness), "
    "silence and channel only.")
# Median voice F0 under this is answered "male": measured male voices sit near 90-120 Hz, female
# ones near 160-220 Hz (flite, espeak-ng); 135 Hz is about their geometric middle.
_MALE_BELOW_HZ = 135.0
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
_UTTERANCE_GAP_S = 0.35  # VAD segments closer than this are one utterance
# Spectral flux (dsp.spectral_flux) of a speech segment below which it is a steady sound, not a voice:
# flite and espeak-ng voices measure about 0.6, a buzzy hum or a chord under 0.2.
_STEADY_FLUX = 0.35


# One wording per analysis (the router sends each to a different kind; a test holds that), none of a dataset.
WARM_UP_QUESTIONS = (
    "Count the tones, please: how many?", "How many different people talk here?",
    "Which of the two notes sits higher, the first or the second?", "What frequency in hertz is the tone?",
    "For how many seconds does the tone last?", "Does the pitch of the tone rise or fall over time?",
    "Which beep is the loudest, the first or the last?", "Does anybody speak in this recording?",
    "Is the recording silent?", "Is the sound in the left or the right channel?",
    "At what second does the talking start?", "Which word is said right after the beep?",
    "Would you call this voice a man or a woman?", "How fast is the person talking, slow or fast?",
    "Which language is spoken?", "What is the sum of the two numbers spoken?",
    "Tell me what the recording says.",
)
_WARM_RATE_HZ = 48000  # the highest rate requests use: the largest decode and resample buffers


def _warm_clip(seconds: float, fmt: str) -> tuple[bytes, str]:
    """A stereo clip of `seconds` encoded as `fmt`: tones left, a noisy chirp right, then silence."""
    rate = _WARM_RATE_HZ
    t = np.arange(int(rate * seconds)) / rate
    beeps = np.where((t % 1.0) < 0.3, 0.3 * np.sin(2 * np.pi * 1000.0 * t), 0.0)
    chirp = 0.2 * np.sin(2 * np.pi * (200.0 + 300.0 * t / seconds) * t)
    noise = np.random.default_rng(0).normal(0.0, 0.05, t.size)
    tail = t < seconds * 0.8
    x = np.stack([beeps * tail, (chirp + noise) * tail], axis=1).astype(np.float32)
    if fmt == "wav":
        return encode_wav(x, rate), fmt
    buf = io.BytesIO()
    sf.write(buf, x, rate, format=SUPPORTED_FORMATS[fmt], subtype=_WARM_SUBTYPES.get(fmt))
    return buf.getvalue(), fmt


_WARM_SUBTYPES = {"mp3": "MPEG_LAYER_III", "ogg": "VORBIS", "flac": "PCM_16"}


@dataclass(frozen=True, slots=True)
class EngineAnswer:
    """The answer text, its token count (whitespace words) and the wall time of the engine call.
    `truncated`: max_tokens cut the answer short (OpenAI's finish_reason "length")."""

    text: str
    completion_tokens: int
    model_call_ms: float
    kind: str
    truncated: bool = False


class _NoSpeechModels(Exception):
    """An analysis needed the VAD or Whisper, which an engine built with speech_models=False does not load."""


class _Clip:
    """Lazily computed views of one decoded clip, so each analysis pays only for what it uses."""

    def __init__(self, audio: DecodedAudio, recognizer: Recognizer | None) -> None:
        self.audio = audio
        self.rate = audio.sample_rate_hz
        self.mono = to_mono(audio.samples)
        self._asr = recognizer
        self._x16k: np.ndarray | None = None
        self._segments: list[SpeechSegment] | None = None
        self._events: list[dsp.ToneEvent] | None = None

    @property
    def x16k(self) -> np.ndarray:
        if self._x16k is None:
            self._x16k = resample(self.mono, self.rate, ASR_RATE_HZ)
        return self._x16k

    @property
    def speech(self) -> list[SpeechSegment]:
        if self._asr is None:
            raise _NoSpeechModels
        if self._segments is None:
            self._segments = speech_segments(self.x16k)
        return self._segments

    @property
    def events(self) -> list[dsp.ToneEvent]:
        if self._events is None:
            self._events = dsp.tone_events(self.mono, self.rate)
        return self._events

    def speech_seconds(self) -> float:
        """Speech not overlapped by tonal events (Silero sometimes fires on a beep), nor steady sound: a
        voice's spectrum moves with its syllables, a hum's or a chord's does not (Silero fires on a buzzy hum)."""
        total = 0.0
        for seg in self.speech:
            if dsp.spectral_flux(self.x16k[int(seg.start_s * ASR_RATE_HZ): int(seg.end_s * ASR_RATE_HZ)],
                                 ASR_RATE_HZ) < _STEADY_FLUX:
                continue
            overlap = sum(max(0.0, min(seg.end_s, e.end_s) - max(seg.start_s, e.start_s))
                          for e in self.events)
            total += max(0.0, seg.duration_s - overlap)
        return total

    def has_speech(self) -> bool:
        return self.speech_seconds() >= 0.25

    def transcribe(self, start_s: float = 0.0, end_s: float | None = None) -> str:
        if self._asr is None:
            raise _NoSpeechModels
        lo = int(start_s * ASR_RATE_HZ)
        hi = len(self.x16k) if end_s is None else int(end_s * ASR_RATE_HZ)
        return self._asr.transcribe(self.x16k[lo:hi]).text

    def utterances(self) -> list[SpeechSegment]:
        """VAD segments joined across short pauses."""
        out: list[SpeechSegment] = []
        for seg in self.speech:
            if out and seg.start_s - out[-1].end_s < _UTTERANCE_GAP_S:
                out[-1] = SpeechSegment(out[-1].start_s, seg.end_s)
            else:
                out.append(seg)
        return out


class Engine:
    """Loads the models once; `answer` is thread-safe for up to `workers` concurrent callers."""

    def __init__(self, workers: int = 1, cpu_threads: int = 0, compute_type: str = "int8",
                 speech_models: bool = True, memo_size: int = 0) -> None:
        """`speech_models=False`: no VAD and no Whisper (no faster-whisper needed); questions that need them are
        answered with NO_SPEECH_MODELS_ANSWER, the signal analyses as ever. `memo_size` > 0 keeps that many
        answers, keyed by the decoded samples and the question, so a repeated request skips the analyses."""
        self.workers = workers
        self.memo_size = memo_size
        self.memo_hits = 0
        self._memo: OrderedDict[bytes, tuple[str, str, bool]] = OrderedDict()
        self._memo_lock = threading.Lock()
        self.recognizer: Recognizer | None = None
        self.speech_model = "none (--no-speech-models)"
        if speech_models:
            load_vad()
            self.recognizer = Recognizer(workers=workers, cpu_threads=cpu_threads, compute_type=compute_type)
            self.speech_model = self.recognizer.name

    def warm_up(self, longest_s: float = 20.0) -> None:
        """Run every analysis and every decoder once per worker, concurrently, on synthetic clips (blocking).

        First use makes each CTranslate2 replica, the VAD, scipy (about 70 MiB) and the allocator's arenas take
        their working memory, and that memory scales with the clip: a pass over one short clip left a 225 MiB
        climb through a first pass over real requests. So each worker decodes a short clip of every container
        (wav, flac, ogg, mp3) and one `longest_s` long (stereo, 48 kHz: the largest buffers a request of that
        length brings), and asks one wording per analysis of each (about 2 s a worker at 20 s). Done before the port opens, that memory is the
        server's starting level instead of a climb through its first requests.
        """
        # Every decoder on a short clip; the long clip's buffers are the same whatever its container (float32 PCM).
        clips = [_warm_clip(1.5, fmt) for fmt in SUPPORTED_FORMATS] + [_warm_clip(longest_s, "wav")]

        def one_pass(_: int) -> None:
            self.answer(decode_audio(*clips[0]), WARM_UP_QUESTIONS[0])  # the entry point itself
            for i, (data, fmt) in enumerate(clips):
                # One _Clip per clip, so the analyses the handlers share (resampling, VAD, tone events) run once.
                clip = _Clip(decode_audio(data, fmt), self.recognizer)
                # Wordings of no dataset: the warm-up exercises the analyses, it rehearses no item.
                for question in WARM_UP_QUESTIONS:
                    r = route(question)
                    try:
                        _HANDLERS[r.kind](clip, r)
                    except _NoSpeechModels:
                        continue
                if i in (0, len(clips) - 1) and self.recognizer is not None:
                    # Whisper even where the VAD hears no speech, on the first short clip and the long one: its
                    # buffers scale with the clip, not the container, so the other short clips add no memory.
                    clip.transcribe()
                dsp.voice_f0_hz(clip.x16k, ASR_RATE_HZ)
            self.answer(None, WARM_UP_QUESTIONS[-1])  # the text-only path

        with ThreadPoolExecutor(self.workers) as pool:
            list(pool.map(one_pass, range(self.workers)))

    def answer(self, audio: DecodedAudio | None, question: str, max_tokens: int | None = None,
               extra_latency_s: float = 0.0) -> EngineAnswer:
        """Answer `question` about `audio` (blocking); model_call_ms is the wall time of this call.

        The one entry point of both the HTTP server and the native worker, so the two give
        byte-identical text. Without audio only what-was-said questions are answered, from the text.
        """
        t0 = time.perf_counter()
        key = _memo_key(audio, question, max_tokens) if self.memo_size > 0 else None
        hit = None
        if key is not None:
            with self._memo_lock:
                hit = self._memo.get(key)
                if hit is not None:
                    self._memo.move_to_end(key)
                    self.memo_hits += 1
        if hit is not None:
            text, kind, truncated = hit
        else:
            text, kind, truncated = self._answer(audio, question, max_tokens)
            if key is not None:
                with self._memo_lock:
                    self._memo[key] = (text, kind, truncated)
                    while len(self._memo) > self.memo_size:
                        self._memo.popitem(last=False)
        if extra_latency_s > 0:
            time.sleep(extra_latency_s)  # fault injection: a slow model, inside the timed call
        ms = (time.perf_counter() - t0) * 1000.0
        return EngineAnswer(text=text, completion_tokens=len(text.split()), model_call_ms=ms,
                            kind=kind, truncated=truncated)

    def _answer(self, audio: DecodedAudio | None, question: str, max_tokens: int | None) -> tuple[str, str, bool]:
        r = route(question)
        if audio is None:
            text = _answer_without_audio(question, r)
        elif r.kind in _HANDLERS:
            try:
                text = _HANDLERS[r.kind](_Clip(audio, self.recognizer), r)
            except _NoSpeechModels:
                text = NO_SPEECH_MODELS_ANSWER
        else:
            text = UNSUPPORTED_ANSWER
        truncated = max_tokens is not None and len(text.split()) > max_tokens
        if max_tokens is not None:
            text = " ".join(text.split()[:max_tokens])
        return text, r.kind.value, truncated


def _memo_key(audio: DecodedAudio | None, question: str, max_tokens: int | None) -> bytes:
    """The samples themselves, not the container's bytes: the answer depends on nothing else of the audio."""
    h = hashlib.blake2b(digest_size=20)
    if audio is not None:
        h.update(f"{audio.sample_rate_hz}:{audio.samples.shape}:".encode())
        h.update(np.ascontiguousarray(audio.samples).data)
    h.update(f"\x00{max_tokens}\x00{question}".encode())
    return h.digest()


def _answer_without_audio(question: str, r: Route) -> str:
    """Text-only request (the transcript arm): answer what-was-said questions from the text itself."""
    if r.kind in (Kind.SPOKEN_NUMBER, Kind.SPOKEN_CONTENT):
        ranked = textqa.answer_comparison(question, question)
        if ranked is not None:
            return ranked
        if r.kind is Kind.SPOKEN_NUMBER and (n := textqa.answer_number(question, question)):
            return n
        # The transcript arm sends `Transcript of the recording: "..."` and the question on the last line:
        # answer from the quoted text, not from the whole prompt, whose best sentence is the question
        # itself (an echo, found by aqbench's completeness check).
        context, _, asked = question.strip().rpartition("\n")
        quoted = re.fullmatch(r'[^"]*"(.*)"\s*', context, re.DOTALL)
        return textqa.answer_content(quoted.group(1) if quoted else context or question, asked if context else question,
                                     r.choices)
    return "There is no audio in this request, so I cannot answer a question about how it sounds."


def _ordinal(i: int) -> str:
    return _ORDINALS[i] if i < len(_ORDINALS) else f"number {i + 1}"


def _pick(choices: tuple[str, ...], vocab: tuple[str, ...], default: str) -> str:
    """The offered choice that contains a word of `vocab`, else the default word."""
    for choice in choices:
        if set(choice.split()) & set(vocab):
            return choice
    return default


def _no_tones(clip: _Clip) -> str | None:
    if dsp.is_silent(clip.audio.samples):
        return "The audio is silent: there is no tone."
    if not clip.events:
        return "I hear no beep or tone in this audio."
    return None


def _count_tones(clip: _Clip, r: Route) -> str:
    if dsp.is_silent(clip.audio.samples):
        return "0"
    return str(len(clip.events))


def _pitch_compare(clip: _Clip, r: Route) -> str:
    if (msg := _no_tones(clip)) is not None:
        return msg
    if len(clip.events) < 2:
        return "I hear only one tone, so there is nothing to compare."
    freqs = [e.freq_hz for e in clip.events]
    i = int(np.argmin(freqs) if r.lowest else np.argmax(freqs))
    return _ordinal(i)


def _frequency(clip: _Clip, r: Route) -> str:
    if (msg := _no_tones(clip)) is not None:
        return msg
    longest = max(clip.events, key=lambda e: e.duration_s)
    return f"{round(longest.freq_hz)} Hz"


def _duration(clip: _Clip, r: Route) -> str:
    ws = set(r.words)
    if ws & {"longer", "shorter", "longest", "shortest", "briefer", "briefest"}:
        if (msg := _no_tones(clip)) is not None:
            return msg
        if len(clip.events) < 2:
            return "I hear only one tone, so there is nothing to compare."
        lengths = [e.duration_s for e in clip.events]
        shortest = bool(ws & {"shorter", "shortest", "briefer", "briefest"})
        return _ordinal(int(np.argmin(lengths) if shortest else np.argmax(lengths)))
    whole = ws & {"clip", "recording", "audio", "file", "track"} and not ws & {"tone", "beep", "sound",
                                                                              "speech", "note"}
    if whole:
        return f"{clip.audio.seconds:.2f} seconds"
    if ws & {"speech", "sentence", "speaking", "talking", "utterance"} and clip.speech:
        return f"{clip.speech[-1].end_s - clip.speech[0].start_s:.2f} seconds"
    if clip.events:
        e = max(clip.events, key=lambda ev: ev.duration_s) if len(clip.events) > 1 else clip.events[0]
        return f"{e.duration_s:.2f} seconds"
    span = dsp.sounding_span(clip.mono, clip.rate)
    if span is None:
        return f"{clip.audio.seconds:.2f} seconds of silence"
    return f"{span[1] - span[0]:.2f} seconds"


_RISING = ("rising", "rise", "rises", "up", "upward", "upwards", "ascending", "increasing", "higher")
_FALLING = ("falling", "fall", "falls", "down", "downward", "downwards", "descending", "decreasing",
            "lower")


def _sweep(clip: _Clip, r: Route) -> str:
    if (msg := _no_tones(clip)) is not None:
        return msg
    if len(clip.events) == 1:
        first, last = clip.events[0].start_freq_hz, clip.events[0].end_freq_hz
    else:
        first, last = clip.events[0].freq_hz, clip.events[-1].freq_hz
    rising = last > first
    return _pick(r.choices, _RISING, "rising") if rising else _pick(r.choices, _FALLING, "falling")


def _loudness(clip: _Clip, r: Route) -> str:
    if (msg := _no_tones(clip)) is not None:
        return msg
    if len(clip.events) < 2:
        return "I hear only one beep, so there is nothing to compare."
    levels = [e.rms_db for e in clip.events]
    return _ordinal(int(np.argmin(levels) if r.lowest else np.argmax(levels)))


def _speech_presence(clip: _Clip, r: Route) -> str:
    speech = clip.has_speech()
    speech_words = {"speech", "speaking", "talking", "voice", "words", "spoken", "someone", "talk"}
    named = [c for c in r.choices if set(c.split()) & speech_words]
    if named:  # "is it speech or noise?": answer with the offered word
        others = [c for c in r.choices if c not in named]
        return named[0] if speech or not others else others[0]
    return "yes" if speech else "no"


def _silence(clip: _Clip, r: Route) -> str:
    silent = dsp.is_silent(clip.audio.samples)
    ws = set(r.words)
    if "or" in ws and ws & {"silent", "silence"} and ws & {"sound", "noise", "something", "anything"}:
        return "silent" if silent else next(w for w in ("sound", "noise", "something", "anything")
                                            if w in ws)
    asks_silence = ws & {"silent", "silence", "quiet", "empty", "blank"}
    return ("yes" if silent else "no") if asks_silence else ("no" if silent else "yes")


def _channel(clip: _Clip, r: Route) -> str:
    if clip.audio.channels < 2:
        return "The audio is mono: both sides carry the same signal."
    left, right = dsp.channel_levels_db(clip.audio.samples)[:2]
    if abs(left - right) < 6.0:
        return "both"
    return "left" if left > right else "right"


def _onset(clip: _Clip, r: Route) -> str:
    """When the speech (or, if the question names a beep or tone, the first tone) starts."""
    from adapters.reference.router import TONE_WORDS

    if set(r.words) & TONE_WORDS and not set(r.words) & {"speech", "speaking", "voice", "talking"}:
        if (msg := _no_tones(clip)) is not None:
            return msg
        return f"{clip.events[0].start_s:.2f} seconds"
    if not clip.has_speech():
        return "I hear no speech in this audio."
    start = clip.speech[0].start_s
    # Silero works in 32 ms windows: refine to the first 10 ms frame above the pre-speech level.
    rms = dsp.frame_rms(clip.x16k, ASR_RATE_HZ)
    lo = max(0, int((start - 0.3) / dsp.FRAME_S))
    hi = min(len(rms), int((start + 0.2) / dsp.FRAME_S))
    if hi > lo:
        floor = float(np.median(rms[: max(1, lo)])) if lo > 0 else 0.0
        peak = float(rms[lo:hi].max())
        threshold = max(floor * 4.0, peak * 0.1)
        above = np.flatnonzero(rms[lo:hi] > threshold)
        if above.size:
            start = (lo + int(above[0])) * dsp.FRAME_S
    return f"{start:.2f} seconds"


def _word_around_tone(clip: _Clip, r: Route) -> str:
    """The word just before (or after) the first beep. With options offered, the nearest stretch of speech on
    that side is recognised on its own (heard in one go, isolated words get merged or dropped) and its nearest
    word matched to the closest option; without, the whole side is recognised and its nearest word given."""
    if (msg := _no_tones(clip)) is not None:
        return msg
    beep = clip.events[0]
    nxt = clip.events[1].start_s if len(clip.events) > 1 else None
    span = (0.0, beep.start_s) if r.lowest else (beep.end_s, nxt)
    if r.choices:
        utterance = _utterance_beside(clip, beep, before=r.lowest)
        if utterance is not None:
            span = (max(0.0, utterance.start_s - 0.1), utterance.end_s + 0.1)
    words = [w for w in (x.strip(".,!?;:\"'").lower() for x in clip.transcribe(*span).split()) if w]
    if not words:
        return "I hear no word there."
    nearest = words[-1] if r.lowest else words[0]
    if not r.choices:
        return nearest
    close = difflib.get_close_matches(nearest, r.choices, n=1, cutoff=0.0)
    return close[0] if close else nearest


def _utterance_beside(clip: _Clip, beep: dsp.ToneEvent, before: bool) -> SpeechSegment | None:
    """The speech nearest the beep on one side: VAD segments that are not the beep (the detector may take a
    beep's onset for speech), joined across the short pauses inside a word ("to-ma-to")."""
    spoken: list[SpeechSegment] = []
    for seg in clip.speech:
        if sum(max(0.0, min(seg.end_s, e.end_s) - max(seg.start_s, e.start_s)) for e in clip.events) \
                >= 0.5 * seg.duration_s:
            continue
        if spoken and seg.start_s - spoken[-1].end_s < _UTTERANCE_GAP_S and not any(
                spoken[-1].end_s <= e.start_s < seg.start_s for e in clip.events):
            spoken[-1] = SpeechSegment(spoken[-1].start_s, seg.end_s)
        else:
            spoken.append(seg)
    if before:
        side = [seg for seg in spoken if seg.end_s <= beep.start_s + 0.05]
        return side[-1] if side else None
    side = [seg for seg in spoken if seg.start_s >= beep.end_s - 0.05]
    return side[0] if side else None


def _voice_f0(clip: _Clip, seg: SpeechSegment | None = None) -> float | None:
    segs = [seg] if seg else clip.speech
    if not segs:
        return None
    x = np.concatenate([clip.x16k[int(s.start_s * ASR_RATE_HZ): int(s.end_s * ASR_RATE_HZ)]
                        for s in segs])
    return dsp.voice_f0_hz(x, ASR_RATE_HZ)


def _speaker_sex(clip: _Clip, r: Route) -> str:
    if not clip.has_speech():
        return "I hear no speech in this audio."
    f0 = _voice_f0(clip)
    if f0 is None:
        return "I cannot measure the voice pitch in this audio."
    male = f0 < _MALE_BELOW_HZ
    if male:
        return _pick(r.choices, ("male", "man", "boy", "men"), "male")
    return _pick(r.choices, ("female", "woman", "girl", "women"), "female")


def _speaker_count(clip: _Clip, r: Route) -> str:
    """Count voices by clustering utterance F0: a new voice starts where pitch jumps by over 25 %."""
    if not clip.has_speech():
        return "0"
    f0s = sorted(f for u in clip.utterances() if (f := _voice_f0(clip, u)) is not None)
    if not f0s:
        return "1"
    clusters = 1 + sum(1 for a, b in zip(f0s, f0s[1:], strict=False) if b / a > 1.25)
    return str(clusters)


def _speaking_rate(clip: _Clip, r: Route) -> str:
    utts = clip.utterances()
    if len(utts) < 2:
        return "I hear only one stretch of speech, so there is nothing to compare."
    if len(utts) > 2:  # split at the longest pause into two parts
        gaps = [b.start_s - a.end_s for a, b in zip(utts, utts[1:], strict=False)]
        k = int(np.argmax(gaps)) + 1
        utts = [SpeechSegment(utts[0].start_s, utts[k - 1].end_s),
                SpeechSegment(utts[k].start_s, utts[-1].end_s)]
    rates = []
    for u in utts:
        n = len(clip.transcribe(max(0.0, u.start_s - 0.05), u.end_s + 0.05).split())
        rates.append(max(n, 1) / max(u.duration_s, 1e-3))
    i = int(np.argmin(rates) if r.lowest else np.argmax(rates))
    return _pick(r.choices, (_ORDINALS[i],), _ORDINALS[i])


def _language(clip: _Clip, r: Route) -> str:
    """English when Whisper tiny.en (English-only) decodes it confidently; otherwise say so honestly."""
    if not clip.has_speech():
        return "I hear no speech in this audio."
    if clip._asr is None:  # has_speech raised already; this tells the type checker
        raise _NoSpeechModels
    t = clip._asr.transcribe(clip.x16k)
    if t.text and t.avg_logprob > -0.8 and t.no_speech_prob < 0.3:
        return "english"
    # Naming no language on purpose: a guess among the choices would be luck, not listening.
    return ("I cannot identify the language: my speech model knows one language only, and this "
            "speech is not in it.")


def _spoken_number(clip: _Clip, r: Route) -> str:
    if not clip.has_speech():
        return "I hear no speech, so nothing was said to count."
    text = clip.transcribe()
    got = textqa.answer_number(text, " ".join(r.words))
    return got if got is not None else textqa.answer_content(text, " ".join(r.words), r.choices)


def _spoken_content(clip: _Clip, r: Route) -> str:
    if not clip.has_speech():
        return "I hear no speech in this audio, so I cannot answer a question about what is said."
    text = clip.transcribe()
    if not text:
        return "I cannot make out the words."
    if (ranked := textqa.answer_comparison(text, " ".join(r.words))) is not None:
        return ranked
    return textqa.answer_content(text, " ".join(r.words), r.choices)


_HANDLERS = {
    Kind.COUNT_TONES: _count_tones,
    Kind.SPEAKER_COUNT: _speaker_count,
    Kind.PITCH_COMPARE: _pitch_compare,
    Kind.FREQUENCY: _frequency,
    Kind.DURATION: _duration,
    Kind.SWEEP: _sweep,
    Kind.LOUDNESS: _loudness,
    Kind.SPEECH_PRESENCE: _speech_presence,
    Kind.SILENCE: _silence,
    Kind.CHANNEL: _channel,
    Kind.ONSET: _onset,
    Kind.WORD_AROUND_TONE: _word_around_tone,
    Kind.SPEAKER_SEX: _speaker_sex,
    Kind.SPEAKING_RATE: _speaking_rate,
    Kind.LANGUAGE: _language,
    Kind.SPOKEN_NUMBER: _spoken_number,
    Kind.SPOKEN_CONTENT: _spoken_content,
}
