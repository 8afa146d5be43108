"""The reference engine in-process: dataset accuracy per kind, fresh clips it never heard, a held-out draw of
audioqa-v2 (other seed, sentences, words and wordings), no rule keyed to a shipped item, routing."""

from __future__ import annotations

import collections
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from _reference_server import DATASET

from adapters.media import DecodedAudio, decode_audio, encode_wav
from adapters.reference.engine import UNSUPPORTED_ANSWER, Engine
from adapters.reference.router import Kind, route

# In-process (Whisper loaded here, no server): it runs beside the serial lane (tests/conftest.py).
pytestmark = pytest.mark.inprocess

SR = 16000


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(workers=1)  # Whisper is loaded once for the whole module (threads, no process)


def _pcm(x: np.ndarray, rate: int = SR) -> DecodedAudio:
    """Round-trip through WAV bytes so the engine sees exactly what a client would send."""
    return decode_audio(encode_wav(x.astype(np.float32), rate), "wav")


def _tone(f: float, d: float, a: float = 0.4, rate: int = SR) -> np.ndarray:
    t = np.arange(int(rate * d)) / rate
    ramp = np.minimum(1.0, np.minimum(t, d - t) / 0.005)  # 5 ms fades, as real beeps have
    return a * ramp * np.sin(2 * np.pi * f * t)


def _sil(d: float, rate: int = SR) -> np.ndarray:
    return np.zeros(int(rate * d))


class TestDatasetAccuracy:
    def test_audio_arm_at_least_90_percent(self, engine):
        """At least 90 % of audioqa-v1 is answered correctly from the audio (manifest used only here)."""
        from orchestrator.dataset import load_dataset
        from orchestrator.judge.scoring import score

        ds = load_dataset(DATASET)
        by_kind: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
        for item in ds.items:
            audio = decode_audio((ds.root / item.audio).read_bytes(), item.container)
            verdict = score(engine.answer(audio, item.question).text, item).verdict
            by_kind[item.kind][0] += verdict == "correct"
            by_kind[item.kind][1] += 1
        table = " ".join(f"{k}={c}/{n}" for k, (c, n) in sorted(by_kind.items()))
        print(f"reference engine per kind: {table}")
        correct = sum(c for c, _ in by_kind.values())
        total = sum(n for _, n in by_kind.values())
        assert correct / total >= 0.9, table
        # Everything except language identification (English-only speech model) is answerable.
        assert all(c == n for k, (c, n) in by_kind.items() if k != "language"), table


HELDOUT = Path(__file__).resolve().parents[1] / "data" / "audioqa-heldout"
DATASETS = Path(__file__).resolve().parents[2] / "datasets"


class TestGeneralises:
    def test_a_held_out_draw_keeps_the_ninety_percent(self, engine):
        """On a draw it was never tuned on (seed 7, the held-out banks: other sentences, words and question
        wordings; other counts, frequencies, durations, orders, channels and voices) the engine answers at
        least 90 % rightly and whole, and every kind but language (its speech model knows English only) at
        least 75 %."""
        from orchestrator.dataset import load_dataset
        from orchestrator.judge.answers import judge_answer
        from orchestrator.judge.scoring import normalize

        held, shipped = load_dataset(HELDOUT), load_dataset(DATASETS / "audioqa-v2")
        # Held out for real: no question wording, sentence or clip of the shipped set.
        assert not {normalize(it.question) for it in held.items} & {normalize(it.question) for it in shipped.items}
        assert not ({normalize(it.transcript) for it in held.items if it.transcript}
                    & {normalize(it.transcript) for it in shipped.items if it.transcript})
        assert not {it.pcm_sha256 for it in held.items} & {it.pcm_sha256 for it in shipped.items}
        by_kind: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
        for item in held.items:
            audio = decode_audio((held.root / item.audio).read_bytes(), item.container)
            verdict = judge_answer(engine.answer(audio, item.question).text, item, question=item.question).verdict
            by_kind[item.kind][0] += verdict == "correct"
            by_kind[item.kind][1] += 1
        table = " ".join(f"{k}={c}/{n}" for k, (c, n) in sorted(by_kind.items()))
        print(f"reference engine on the held-out draw: {table}")
        assert sum(c for c, _ in by_kind.values()) >= 0.9 * sum(n for _, n in by_kind.values()), table
        assert all(c >= 0.75 * n for k, (c, n) in by_kind.items() if k != "language"), table

    def test_no_rule_is_keyed_to_a_shipped_item(self):
        """The engine's source names no item id, clip, file hash, question or spoken sentence of a shipped set
        (its rules route by keywords and measure the audio; it never sees a dataset)."""
        from orchestrator.dataset import load_dataset
        from orchestrator.judge.scoring import normalize

        source = "\n".join(p.read_text() for p in sorted((Path(__file__).resolve().parents[2] / "adapters" / "reference").glob("*.py")))
        flat = normalize(source)
        for name in ("audioqa-v1", "audioqa-v2"):
            for item in load_dataset(DATASETS / name).items:
                assert item.id not in source, item.id
                assert Path(item.audio).stem not in source or "-" not in Path(item.audio).stem, item.audio
                assert item.sha256[:16] not in source and item.pcm_sha256[:16] not in source, item.id
                assert f" {normalize(item.question)} " not in f" {flat} ", item.question
                if item.transcript and len(item.transcript.split()) >= 4:
                    assert f" {normalize(item.transcript)} " not in f" {flat} ", item.transcript


class TestWholeAnswers:
    def test_transcript_arm_answers_are_whole_and_counted_in_words(self, engine, tmp_path):
        """On the transcript arm the engine answers from the quoted transcript, never by echoing the prompt
        (aqbench's completeness check found it repeating the whole question); completion_tokens is the
        answer's whitespace word count (the engine has no tokenizer) and reaches max_tokens only when cut."""
        from orchestrator.dataset import load_dataset, prepare_arms
        from orchestrator.judge.completeness import check_completeness

        ds = load_dataset(DATASET)
        speech = [it for it in ds.items if it.transcript]
        prompts = {r.item_id: r.text for r in prepare_arms(ds, ["transcript"], tmp_path)}
        for item in speech:
            ans = engine.answer(None, prompts[item.id])
            assert check_completeness(ans.text, item.question).complete, (item.id, ans.text)
            assert ans.completion_tokens == len(ans.text.split())
        long = engine.answer(None, "What is the pitch of the tone?")
        assert long.completion_tokens > 4
        cut = engine.answer(None, "What is the pitch of the tone?", max_tokens=4)
        assert cut.completion_tokens == 4 and cut.text == " ".join(long.text.split()[:4])


class TestFreshSignalClips:
    @pytest.mark.parametrize("count", [1, 4, 6, 9])
    def test_counts_beeps(self, engine, count):
        """Beep counts it has never heard are counted exactly."""
        x = np.concatenate([np.concatenate([_tone(1200, 0.12), _sil(0.18)]) for _ in range(count)])
        assert engine.answer(_pcm(np.concatenate([_sil(0.4), x])), "How many beeps are there?").text == str(count)

    @pytest.mark.parametrize("freq", [330, 700, 1500, 3000])
    def test_frequency(self, engine, freq):
        """A tone's frequency is reported within a few hertz."""
        text = engine.answer(_pcm(_tone(freq, 0.6)), "What frequency is this tone, in Hz?").text
        assert abs(float(text.split()[0]) - freq) <= 5, text

    def test_pitch_loudness_duration_sweep_channel_silence(self, engine):
        """Higher/lower, louder, longer, sweep direction, channel side and silence follow the clip."""
        two = np.concatenate([_sil(0.2), _tone(900, 0.3, 0.1), _sil(0.3), _tone(500, 0.6, 0.5), _sil(0.2)])
        a = _pcm(two)
        assert engine.answer(a, "Which tone is higher, the first or the second?").text == "first"
        assert engine.answer(a, "Which tone is lower, the first or the second?").text == "second"
        assert engine.answer(a, "Which beep is louder, the first or the second?").text == "second"
        assert engine.answer(a, "Which tone is quieter: the first or the second?").text == "first"
        assert engine.answer(a, "Which tone lasts longer, the first or the second?").text == "second"
        t = np.arange(SR) / SR
        down = 0.4 * np.sin(2 * np.pi * (1200 * t - 400 * t * t))
        assert engine.answer(_pcm(down), "Is the sweep rising or falling?").text == "falling"
        assert engine.answer(_pcm(down), "Does the pitch go up or down?").text == "down"
        stereo = np.stack([np.zeros(SR), _tone(800, 1.0)], axis=1)
        assert engine.answer(_pcm(stereo), "Is the sound in the left or the right channel?").text == "right"
        assert engine.answer(_pcm(_sil(1.0)), "Is this recording silent?").text == "yes"
        assert engine.answer(_pcm(_tone(440, 1.0)), "Is this recording silent?").text == "no"
        onset = np.concatenate([_sil(1.2), _tone(700, 0.3)])
        got = engine.answer(_pcm(onset), "How many seconds into the clip does the beep start?").text
        assert abs(float(got.split()[0]) - 1.2) < 0.05, got

    def test_noise_is_not_speech(self, engine):
        """Seeded white noise holds no speech and no beeps."""
        noise = np.random.default_rng(3).normal(0, 0.1, SR * 2)
        assert engine.answer(_pcm(noise), "Does this recording contain speech?").text == "no"
        assert engine.answer(_pcm(noise), "How many beeps do you hear?").text == "0"

    def test_unsupported_and_deterministic(self, engine):
        """A question no analysis fits is declined plainly; the same input gives the same answer."""
        a = _pcm(_tone(440, 0.5))
        assert engine.answer(a, "Paint me a picture.").text == UNSUPPORTED_ANSWER
        assert {engine.answer(a, "What is the frequency?").text for _ in range(3)} == {"440 Hz"}


def _flite(text: str, voice: str, path: Path) -> np.ndarray:
    subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(path)], check=True)
    x, rate = sf.read(path, dtype="float32")
    assert rate == SR
    return x


@pytest.mark.skipif(shutil.which("flite") is None, reason="flite (TTS) is not installed (CI has none)")
class TestFreshSpeechClips:
    def test_words_around_a_beep_and_arithmetic(self, engine, tmp_path):
        """New words around a beep, a new sum and a new speaker are answered from the audio."""
        w1 = _flite("Orange.", "kal16", tmp_path / "a.wav")
        w2 = _flite("Tomato.", "kal16", tmp_path / "b.wav")
        clip = _pcm(np.concatenate([_sil(0.3), w1, _sil(0.3), _tone(1000, 0.25), _sil(0.3), w2, _sil(0.3)]))
        assert engine.answer(clip, "Which word is said right after the beep?").text == "tomato"
        assert engine.answer(clip, "Which word is spoken just before the beep?").text == "orange"
        sums = _pcm(_flite("Tom had nine books and lost four of them.", "kal16", tmp_path / "c.wav"))
        assert engine.answer(sums, "How many books does Tom have left?").text == "5"
        female = _pcm(_flite("See you at the station tonight.", "slt", tmp_path / "d.wav"))
        assert engine.answer(female, "Is the speaker a man or a woman?").text == "woman"
        late = _pcm(np.concatenate([_sil(2.0), _flite("Hello there.", "kal16", tmp_path / "e.wav")]))
        got = engine.answer(late, "When does the speech start, in seconds?").text
        assert abs(float(got.split()[0]) - 2.0) < 0.3, got


class TestRouter:
    @pytest.mark.parametrize("question,kind", [
        ("How many beeps can you count?", Kind.COUNT_TONES),
        ("How many euros are left?", Kind.SPOKEN_NUMBER),
        ("Which ear is the voice in, left or right?", Kind.CHANNEL),
        ("Is the first tone or the second tone higher?", Kind.PITCH_COMPARE),
        ("Two tones play one after the other. Which tone is higher?", Kind.PITCH_COMPARE),
        ("What is the pitch of the tone in hertz?", Kind.FREQUENCY),
        ("Is anyone talking?", Kind.SPEECH_PRESENCE),
        ("Is the speaker male or female?", Kind.SPEAKER_SEX),
        ("How many different voices are there?", Kind.SPEAKER_COUNT),
        ("Which language is this: German or French?", Kind.LANGUAGE),
        ("Which word comes right after the beep?", Kind.WORD_AROUND_TONE),
        ("Is the second reading slower?", Kind.SPEAKING_RATE),
        ("Tell me a joke.", Kind.SPOKEN_CONTENT),
    ])
    def test_paraphrases(self, question, kind):
        """Paraphrased questions reach the right analysis."""
        assert route(question).kind is kind


class TestAnswerMemo:
    def test_a_repeat_is_answered_from_the_memo_with_the_same_text_and_misses_are_computed(self) -> None:
        """--memoize-answers: same samples and question -> the memo's answer; other audio or question -> computed."""
        memo = Engine(workers=1, speech_models=False, memo_size=2)
        plain = Engine(workers=1, speech_models=False)
        two = _pcm(np.concatenate([_tone(440, 0.3), _sil(0.3), _tone(440, 0.3)]))
        three = _pcm(np.concatenate([_tone(440, 0.3), _sil(0.3), _tone(440, 0.3), _sil(0.3), _tone(440, 0.3)]))
        q = "How many beeps do you hear?"
        first = memo.answer(two, q)
        again = memo.answer(two, q)
        assert memo.memo_hits == 1
        assert again.text == first.text == plain.answer(two, q).text
        assert memo.answer(three, q).text == plain.answer(three, q).text != first.text  # other samples: computed
        assert memo.memo_hits == 1
        memo.answer(two, "Is the recording silent?")  # third distinct key: the oldest (two, q) is dropped...
        memo.answer(two, q)
        assert memo.memo_hits == 1  # ...so this is computed again, the memo stays at 2 answers
        assert memo.answer(two, q, max_tokens=1).text == " ".join(first.text.split()[:1])  # max_tokens is in the key
