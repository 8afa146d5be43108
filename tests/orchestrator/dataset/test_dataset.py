"""The shipped audio-QA sets and the loader: coverage, validation errors, identity and path safety; audioqa-v2's
size and variety, the conditioning subset and the kind-interleaved AIPerf rows."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
import soundfile as sf

from orchestrator.base.errors import DatasetError
from orchestrator.config import DatasetConfig
from orchestrator.dataset import (
    KINDS,
    MANIFEST,
    conditioning_subset,
    interleave_kinds,
    load_dataset,
    prepare_arms,
    probe_audio,
    resolve_dataset_path,
)

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "datasets" / "audioqa-v1"
V2 = ROOT / "datasets" / "audioqa-v2"


@pytest.fixture(scope="module")
def shipped():
    return load_dataset(SHIPPED)


def _write_tone(path: Path, rate: int = 16000, seconds: float = 0.5) -> None:
    t = np.arange(int(rate * seconds)) / rate
    sf.write(str(path), (0.3 * np.sin(2 * np.pi * 440 * t) * 32767).astype(np.int16), rate, subtype="PCM_16")


def _line(root: Path, audio: str = "clip.wav", **over: Any) -> dict[str, Any]:
    props = msgspec.structs.asdict(probe_audio(root / audio))
    base = {"id": "tone-count", "audio": audio, "question": "How many tones?", "answer": "1", "scoring": "numeric",
            "kind": "count", "transcript_answerable": False, "recipe": "440 Hz", **props}
    base.update(over)
    return base


def _dataset(tmp_path: Path, *lines: dict[str, Any]) -> Path:
    (tmp_path / MANIFEST).write_text("".join(json.dumps(x) + "\n" for x in lines))
    return tmp_path


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    _write_tone(tmp_path / "clip.wav")
    return tmp_path


class TestShippedSet:
    def test_loads_with_enough_items_and_every_kind(self, shipped) -> None:
        """The committed set verifies, has at least 40 items and covers every kind in KINDS."""
        assert len(shipped.items) >= 40
        assert {it.kind for it in shipped.items} == set(KINDS)

    def test_most_items_need_the_audio(self, shipped) -> None:
        """At least 60 % of the items cannot be answered from a transcript."""
        share = sum(not it.transcript_answerable for it in shipped.items) / len(shipped.items)
        assert share >= 0.6

    def test_conditioning_pairs(self, shipped) -> None:
        """At least four same-clip and four same-question pairs with different answers exist."""
        pairs = shipped.conditioning_pairs()
        for relation in ("same_clip", "same_question"):
            assert sum(p.relation == relation for p in pairs) >= 4
        for p in pairs:
            a, b = shipped.item(p.first), shipped.item(p.second)
            assert a.answer != b.answer
            assert (a.audio == b.audio) == (p.relation == "same_clip")

    def test_long_passage_has_three_questions(self, shipped) -> None:
        """One 20-30 s clip is asked at least three questions."""
        long = [it for it in shipped.items if 20 <= it.duration_s <= 30]
        assert len({it.audio for it in long}) >= 1
        assert max(sum(it.audio == a for it in long) for a in {it.audio for it in long}) >= 3

    def test_formats_rates_channels_durations_and_size(self, shipped) -> None:
        """WAV/FLAC/OGG/MP3, the six rates, mono and stereo, 0.5-30 s, well under 15 MB."""
        clips = {it.audio: it for it in shipped.items}.values()
        assert {c.container for c in clips} == {"wav", "flac", "ogg", "mp3"}
        assert {c.sample_rate_hz for c in clips} >= {8000, 16000, 22050, 24000, 44100, 48000}
        assert {c.channels for c in clips} == {1, 2}
        assert all(0.5 <= c.duration_s <= 30 for c in clips)
        assert min(c.duration_s for c in clips) <= 0.6 and max(c.duration_s for c in clips) >= 20
        assert sum(f.stat().st_size for f in SHIPPED.rglob("*") if f.is_file()) < 8e6

    def test_properties_match_independent_decoding(self, shipped) -> None:
        """Rate, channels, frames and duration in the manifest equal what soundfile reports for each file."""
        for it in shipped.items:
            info = sf.info(str(SHIPPED / it.audio))
            assert (info.samplerate, info.channels, info.frames) == (it.sample_rate_hz, it.channels, it.frames)
            assert info.format.lower() == it.container
            assert it.duration_s == pytest.approx(info.frames / info.samplerate, abs=1e-6)
            assert it.bytes == (SHIPPED / it.audio).stat().st_size

    def test_speech_items_carry_transcripts(self, shipped) -> None:
        """Transcript-answerable items have a transcript; pure signal clips have none."""
        for it in shipped.items:
            if it.transcript_answerable:
                assert it.transcript
            if it.kind in ("count", "pitch", "frequency", "direction", "loudness", "silence"):
                assert it.transcript is None, it.id

    def test_identity_is_stable_and_tracks_the_manifest(self, shipped, tmp_path: Path) -> None:
        """Loading twice gives the same identity; editing one question changes it."""
        assert load_dataset(SHIPPED).identity == shipped.identity
        copy = tmp_path / "copy"
        shutil.copytree(SHIPPED, copy)
        text = (copy / MANIFEST).read_text().replace("How many beeps do you hear?", "How many beeps are there?", 1)
        (copy / MANIFEST).write_text(text)
        assert load_dataset(copy).identity != shipped.identity

    def test_item_lookup(self, shipped) -> None:
        """item(id) finds an item and names an unknown id in its error."""
        assert shipped.item("count-beeps-5").answer == "5"
        with pytest.raises(DatasetError, match="no item 'nope'"):
            shipped.item("nope")


@pytest.fixture(scope="module")
def v2():
    return load_dataset(V2)


class TestAudioqaV2:
    def test_four_hundred_audio_problems_over_every_kind_of_v1(self, v2, shipped) -> None:
        """At least 400 items (each one audio-arm problem), every kind of audioqa-v1, each kind with at least
        15 items so that a per-kind gate is more than a handful of answers; no kind over an eighth of the set."""
        kinds = Counter(it.kind for it in v2.items)
        assert len(v2.items) >= 400
        assert set(kinds) == {it.kind for it in shipped.items} == set(KINDS)
        assert min(kinds.values()) >= 15 and max(kinds.values()) <= len(v2.items) / 8, kinds

    def test_varied_voices_wordings_values_and_formats(self, v2) -> None:
        """More voices than v1 (flite's four and espeak-ng variants), several wordings per kind, varied counts,
        frequencies, sides and onsets, every container and rate, mono and stereo, at most 30 MB."""
        recipes = " ".join(it.recipe for it in v2.items)
        assert all(v in recipes for v in ("flite kal16", "flite slt", "flite awb", "flite rms", "espeak-ng en+f",
                                          "espeak-ng en+m", "speed"))
        for kind in KINDS:
            wordings = {it.question for it in v2.items if it.kind == kind}
            assert len(wordings) >= 2, kind
        assert {int(it.answer) for it in v2.items if it.kind == "count"} == set(range(1, 10))
        assert len({it.answer for it in v2.items if it.kind == "frequency"}) >= 12
        assert {it.answer for it in v2.items if it.kind == "channel"} == {"left", "right", "both"}
        assert len({it.answer for it in v2.items if it.kind == "timing"}) >= 15
        clips = {it.audio: it for it in v2.items}.values()
        assert {c.container for c in clips} == {"wav", "flac", "ogg", "mp3"} and {c.channels for c in clips} == {1, 2}
        assert {c.sample_rate_hz for c in clips} >= {8000, 16000, 22050, 24000, 44100, 48000}
        assert not any(c.container == "mp3" and c.channels == 2 for c in clips)
        assert sum(f.stat().st_size for f in V2.rglob("*") if f.is_file()) <= 30e6

    def test_the_first_probe_pairs_test_the_audio_itself(self, v2) -> None:
        """The manifest's first conditioning pairs are items a transcript cannot answer (pitch, count)."""
        from orchestrator.qualify.capability import select_probe_pairs

        pairs = select_probe_pairs(v2)
        assert {p.relation for p in pairs} == {"same_clip", "same_question"} and len(pairs) == 8
        assert not any(v2.item(i).transcript_answerable for p in pairs for i in (p.first, p.second))


class TestConditioningSubset:
    def test_dealt_across_kinds_and_only_speech_items_for_the_transcript_arm(self, v2) -> None:
        """N items per arm, every kind among them before any kind gets a second; the transcript arm picks only
        items with a transcript; 0 or too many means every eligible item."""
        silence = conditioning_subset(v2, "silence", 48)
        kinds = Counter(v2.item(i).kind for i in silence)
        assert len(silence) == 48 and set(kinds) == set(KINDS) and max(kinds.values()) - min(kinds.values()) <= 1
        transcript = conditioning_subset(v2, "transcript", 48)
        assert len(transcript) == 48 and all(v2.item(i).transcript for i in transcript)
        assert conditioning_subset(v2, "silence", 0) == {it.id for it in v2.items}
        assert conditioning_subset(v2, "transcript", 10_000) == {it.id for it in v2.items if it.transcript}

    def test_prepare_arms_keeps_every_audio_item_and_the_subsets(self, v2, tmp_path: Path) -> None:
        """With conditioning_items the audio arm still asks every item; `only` keeps the named pairs."""
        rows = prepare_arms(v2, ["audio", "silence", "transcript"], tmp_path, conditioning_items=12)
        by_arm = Counter(r.arm for r in rows)
        assert by_arm == {"audio": len(v2.items), "silence": 12, "transcript": 12}
        only = prepare_arms(v2, ["audio", "silence"], tmp_path, only=[("count-000", "silence")])
        assert [(r.item_id, r.arm) for r in only] == [("count-000", "silence")]

    def test_interleaved_rows_reach_every_kind_in_any_window_as_long_as_the_kinds(self, v2, tmp_path: Path) -> None:
        """AIPerf sends rows in file order: dealt by kind, the first 17 rows ask all 17 kinds, and so does any
        run of 17 rows while every kind still has items."""
        rows = interleave_kinds(prepare_arms(v2, ["audio"], tmp_path), v2)
        assert len(rows) == len(v2.items)
        for start in (0, 5, 100):
            assert {v2.item(r.item_id).kind for r in rows[start:start + len(KINDS)]} == set(KINDS)


class TestResolve:
    def test_path_wins(self, tmp_path: Path) -> None:
        """An explicit [dataset] path is used as given."""
        assert resolve_dataset_path(DatasetConfig(path=str(tmp_path))) == tmp_path

    def test_shipped_name_resolves_to_the_repo_folder(self) -> None:
        """In an editable install the shipped names resolve to datasets/<name> of the checkout; the default is
        audioqa-v2, and audioqa-v1 stays shipped."""
        assert resolve_dataset_path(DatasetConfig()).resolve() == V2
        assert resolve_dataset_path(DatasetConfig(name="audioqa-v1")).resolve() == SHIPPED

    def test_unknown_name(self) -> None:
        """An unknown dataset name is an error that says to set a path."""
        with pytest.raises(DatasetError, match="'nope': not shipped.*set \\[dataset\\] path"):
            resolve_dataset_path(DatasetConfig(name="nope"))


Mutation = Callable[[dict[str, Any]], None]


def _set(**kv: Any) -> Mutation:
    return lambda d: d.update(kv)


class TestValidation:
    def test_valid_minimal_dataset(self, tiny: Path) -> None:
        """A one-item manifest built from the real file's properties loads."""
        ds = load_dataset(_dataset(tiny, _line(tiny)))
        assert [it.id for it in ds.items] == ["tone-count"] and ds.name == tiny.name

    @pytest.mark.parametrize(("mutate", "message"), [
        (lambda d: d.pop("answer"), r"'tone-count': field answer: missing \(required\)"),
        (_set(colour="red"), r"field colour: unknown field"),
        (_set(frames="many"), r"field frames: expected int, got str"),
        (_set(scoring="fuzzy"), r"field scoring: invalid enum value 'fuzzy'"),
        (_set(id="Bad Id"), r"'Bad Id': field id: expected str matching regex"),
        (_set(sha256="abc"), r"field sha256: expected str matching regex"),
        (_set(tolerance=-1.0), r"field tolerance: expected float >= 0"),
        (_set(answer="one"), r"field answer: numeric scoring needs a plain number"),
        (_set(scoring="choice", answer="3", choices=["1", "2"]), r"field answer: '3' is not one of the choices"),
        (_set(scoring="choice", answer="1", choices=["1"]), r"field choices: choice scoring needs at least two"),
        (_set(scoring="choice", answer="1", choices=["1", "2"], choice_aliases={"3": ["x"]}),
         r"field choice_aliases: key '3' is not one of the choices"),
        (_set(scoring="exact", tolerance=0.5), r"field tolerance: only allowed with scoring 'numeric'"),
        (_set(scoring="exact", answer="!!!"), r"field answer: '!!!' is empty after normalisation"),
        (_set(transcript_answerable=True), r"field transcript_answerable: true, but the item has no transcript"),
        (_set(transcript="  "), r"field transcript: empty"),
        (_set(sample_rate_hz=22050), r"field sample_rate_hz: manifest says 22050, but clip.wav has 16000"),
        (_set(channels=2), r"field channels: manifest says 2"),
        (_set(frames=7999), r"field frames: manifest says 7999, but clip.wav has 8000"),
        (_set(duration_s=0.6), r"field duration_s: manifest says 0.6, but clip.wav decodes to 0.5 s"),
        (_set(bytes=1), r"field bytes: manifest says 1"),
        (_set(sha256="0" * 64), r"field sha256: manifest says '0{64}'.*regenerate the manifest or restore"),
        (_set(pcm_sha256="0" * 64), r"field pcm_sha256: manifest says"),
        (_set(container="flac"), r"field audio: extension of 'clip.wav' does not match container 'flac'"),
        (_set(codec="vorbis"), r"field codec: manifest says 'vorbis', but clip.wav has 'pcm_s16le'"),
        (_set(audio="missing.wav"), r"field audio: file 'missing.wav' does not exist"),
    ])
    def test_each_error_names_item_and_field(self, tiny: Path, mutate: Mutation, message: str) -> None:
        """Each invalid manifest value fails loading with the line, the item and the field named."""
        line = _line(tiny)
        mutate(line)
        with pytest.raises(DatasetError, match=rf"manifest.jsonl:1: item .*{message}"):
            load_dataset(_dataset(tiny, line))

    def test_duplicate_id(self, tiny: Path) -> None:
        """A repeated id names the line of the first one."""
        with pytest.raises(DatasetError, match=r"manifest.jsonl:2: item 'tone-count': field id: duplicate of line 1"):
            load_dataset(_dataset(tiny, _line(tiny), _line(tiny)))

    def test_changed_file_is_caught(self, tiny: Path) -> None:
        """Rewriting the clip after the manifest was made fails the sha256 check."""
        line = _line(tiny)
        data, rate = sf.read(str(tiny / "clip.wav"), dtype="int16")
        data[100] ^= 1
        sf.write(str(tiny / "clip.wav"), data, rate, subtype="PCM_16")
        with pytest.raises(DatasetError, match="field sha256"):
            load_dataset(_dataset(tiny, line))

    def test_not_json_and_empty_and_missing(self, tiny: Path) -> None:
        """A non-JSON line, an empty manifest and a missing manifest are each reported."""
        (tiny / MANIFEST).write_text("{not json\n")
        with pytest.raises(DatasetError, match=r"manifest.jsonl:1: not a JSON object"):
            load_dataset(tiny)
        (tiny / MANIFEST).write_text("\n")
        with pytest.raises(DatasetError, match=r"manifest.jsonl: no items"):
            load_dataset(tiny)
        (tiny / MANIFEST).unlink()
        with pytest.raises(DatasetError, match=r"no manifest.jsonl"):
            load_dataset(tiny)

    @pytest.mark.parametrize("audio", ["../clip.wav", "/etc/passwd", "sub/../../clip.wav", "sub\\clip.wav",
                                       "./clip.wav/", "C:/clip.wav"])
    def test_path_escapes_rejected(self, tiny: Path, audio: str) -> None:
        """Absolute, parent-relative, backslash and drive paths are refused before any file is opened."""
        line = _line(tiny)
        line["audio"] = audio
        with pytest.raises(DatasetError, match=r"field audio: .* must be a relative '/'-separated path"):
            load_dataset(_dataset(tiny, line))

    def test_symlink_escape_rejected(self, tmp_path: Path) -> None:
        """A symbolic link inside the folder that points outside it is refused."""
        outside = tmp_path / "outside.wav"
        _write_tone(outside)
        root = tmp_path / "ds"
        root.mkdir()
        (root / "clip.wav").symlink_to(outside)
        with pytest.raises(DatasetError, match=r"field audio: 'clip.wav' resolves to .*outside"):
            load_dataset(_dataset(root, _line(root)))


class TestDatasetCheckCommand:
    def test_counts_by_kind_and_arm(self) -> None:
        """`aqbench dataset check` verifies the default set (audioqa-v2) and prints its items by kind and arm,
        with the conditioning subset when asked; audioqa-v1 stays checkable by path."""
        import subprocess
        import sys

        done = subprocess.run([sys.executable, "-m", "orchestrator", "dataset", "check", "--conditioning-items", "48"],
                              capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        out = done.stdout
        assert f"{V2}: 415 items" in out
        assert "items by kind and arm (silence and transcript on 48 items each):" in out
        header = next(ln for ln in out.splitlines() if ln.strip().startswith("kind "))
        assert header.split() == ["kind", "items", "audio", "silence", "transcript"]
        total = next(ln for ln in out.splitlines() if ln.startswith("  total ")).split()
        assert total == ["total", "415", "415", "48", "48"]
        v1 = subprocess.run([sys.executable, "-m", "orchestrator", "dataset", "check", str(SHIPPED)],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert v1.returncode == 0 and "55 items" in v1.stdout
        assert next(ln for ln in v1.stdout.splitlines() if ln.startswith("  total ")).split()[1:] == \
            ["55", "55", "55", "34"]
