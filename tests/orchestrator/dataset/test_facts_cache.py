"""Facts kept between runs: a dataset's clips are decoded once while their files stay as they were, a changed
clip is decoded again, a corrupt facts file is named and ignored; the WAV made from a clip is found again."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import msgspec
import numpy as np
import pytest
import soundfile as sf
from structlog.testing import capture_logs

import orchestrator.dataset.sets as sets
from orchestrator.base.errors import DatasetError
from orchestrator.dataset import MANIFEST, AudioProps, load_dataset, prepare_arms, probe_audio
from orchestrator.dataset.clip_cache import ClipCache

SHIPPED = Path(__file__).resolve().parents[3] / "datasets" / "audioqa-v1"


def _tone(path: Path, hz: float) -> None:
    t = np.arange(8000) / 16000
    sf.write(str(path), (0.3 * np.sin(2 * np.pi * hz * t) * 32767).astype(np.int16), 16000, subtype="PCM_16")


def _tiny(root: Path) -> Path:
    """A dataset of two WAV clips, each asked one question."""
    root.mkdir()
    lines = []
    for name, hz in (("low", 440.0), ("high", 880.0)):
        _tone(root / f"{name}.wav", hz)
        props = msgspec.structs.asdict(probe_audio(root / f"{name}.wav"))
        lines.append({"id": f"tone-{name}", "audio": f"{name}.wav", "question": "How many tones?", "answer": "1",
                      "scoring": "numeric", "kind": "count", "transcript_answerable": False, "recipe": "tone",
                      **props})
    (root / MANIFEST).write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The clips the loader decodes, in order (the real probe runs)."""
    seen: list[Path] = []

    def counted(path: Path) -> AudioProps:
        seen.append(path)
        return probe_audio(path)

    monkeypatch.setattr(sets, "probe_audio", counted)
    return seen


class TestClipFacts:
    def test_unchanged_clips_are_not_decoded_again(self, tmp_path: Path, probes: list[Path]) -> None:
        """The second load with the same facts folder decodes no clip and gives the same dataset."""
        root, facts = _tiny(tmp_path / "set"), tmp_path / "facts"
        first = load_dataset(root, facts=facts)
        assert len(probes) == 2 and len(list(facts.glob("dataset-set-*.json"))) == 1
        assert load_dataset(root, facts=facts) == first
        assert len(probes) == 2

    def test_a_changed_clip_is_decoded_again_even_with_its_old_mtime(self, tmp_path: Path,
                                                                       probes: list[Path]) -> None:
        """A clip rewritten in place with other samples of the same size, its modification time set back, is
        decoded again and fails the manifest's hash; the unchanged clip is not decoded."""
        root, facts = _tiny(tmp_path / "set"), tmp_path / "facts"
        load_dataset(root, facts=facts)
        clip = root / "high.wav"
        before = clip.stat()
        data = bytearray(clip.read_bytes())
        data[-2:] = bytes([data[-2] ^ 0xFF, data[-1]])
        clip.write_bytes(bytes(data))
        os.utime(clip, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert (clip.stat().st_size, clip.stat().st_mtime_ns, clip.stat().st_ino) == (
            before.st_size, before.st_mtime_ns, before.st_ino)
        with pytest.raises(DatasetError, match=r"item 'tone-high': field sha256: manifest says '[0-9a-f]{64}', but "
                           r"high.wav has '[0-9a-f]{64}'; regenerate the manifest or restore the file"):
            load_dataset(root, facts=facts)
        assert probes[2:] == [clip]

    def test_a_clip_replaced_by_a_copy_is_decoded_again(self, tmp_path: Path, probes: list[Path]) -> None:
        """A clip replaced by a copy of itself (a new file) is decoded again, and still verifies."""
        root, facts = _tiny(tmp_path / "set"), tmp_path / "facts"
        load_dataset(root, facts=facts)
        shutil.copy2(root / "low.wav", tmp_path / "low.wav")
        os.replace(tmp_path / "low.wav", root / "low.wav")
        load_dataset(root, facts=facts)
        assert probes[2:] == [root / "low.wav"]

    def test_a_corrupt_facts_file_is_named_ignored_and_rewritten(self, tmp_path: Path, probes: list[Path]) -> None:
        """Facts that do not decode are named in a warning and not used: every clip is decoded, and the file is
        rewritten so that the next load decodes none."""
        root, facts = _tiny(tmp_path / "set"), tmp_path / "facts"
        load_dataset(root, facts=facts)
        (kept,) = facts.glob("dataset-set-*.json")
        kept.write_text(kept.read_text()[:-40])
        with capture_logs() as logs:
            load_dataset(root, facts=facts)
        (warning,) = [x for x in logs if x["event"] == "facts_cache_ignored"]
        assert warning["log_level"] == "warning" and warning["path"] == str(kept)
        assert warning["reason"].startswith("not a facts file of this aqbench (")
        assert len(probes) == 4
        load_dataset(root, facts=facts)
        assert len(probes) == 4

    def test_well_formed_facts_of_another_shape_are_not_trusted(self, tmp_path: Path, probes: list[Path]) -> None:
        """A facts file whose entries lack a stamp is ignored with a warning, not taken as the clips' facts."""
        root, facts = _tiny(tmp_path / "set"), tmp_path / "facts"
        load_dataset(root, facts=facts)
        (kept,) = facts.glob("dataset-set-*.json")
        stored = json.loads(kept.read_text())
        for entry in stored["facts"].values():
            del entry["stamp"]
        kept.write_text(json.dumps(stored))
        with capture_logs() as logs:
            load_dataset(root, facts=facts)
        assert [x["event"] for x in logs] == ["facts_cache_ignored"] and len(probes) == 4

    def test_facts_of_another_version_are_dropped_quietly(self, tmp_path: Path, probes: list[Path]) -> None:
        """Facts kept under another decoder version are decoded again without a warning."""
        root, facts = _tiny(tmp_path / "set"), tmp_path / "facts"
        load_dataset(root, facts=facts)
        (kept,) = facts.glob("dataset-set-*.json")
        kept.write_text(kept.read_text().replace('"version":"1; libsndfile', '"version":"0; libsndfile'))
        with capture_logs() as logs:
            load_dataset(root, facts=facts)
        assert logs == [] and len(probes) == 4

    def test_a_folder_that_cannot_be_written_is_said_and_the_load_goes_on(self, tmp_path: Path) -> None:
        """A facts folder that is a file: the dataset loads, and a warning names where the facts were not kept."""
        root, facts = _tiny(tmp_path / "set"), tmp_path / "facts"
        facts.write_text("")
        with capture_logs() as logs:
            assert len(load_dataset(root, facts=facts).items) == 2
        (warning,) = logs
        assert warning["event"] == "facts_cache_not_saved" and warning["path"].startswith(str(facts) + "/")


class TestMadeWav:
    def test_a_second_prepare_decodes_no_clip(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """With a cache, the WAV made from each FLAC or Ogg clip and each silence is found again by the next
        run without decoding; an entry removed from the cache is made again, to the same bytes."""
        ds, cache = load_dataset(SHIPPED), tmp_path / "cache"
        rows = prepare_arms(ds, ["audio", "silence"], tmp_path / "run1" / "wire", cache=cache)
        entries = {p.name: p.read_bytes() for p in ClipCache(cache).entries()}
        assert any(it.container in ("flac", "ogg") for it in ds.items) and entries
        real_read = sf.read

        def no_decode(*args: object, **kwargs: object) -> None:
            raise AssertionError("decoded a clip whose WAV is in the cache")

        monkeypatch.setattr(sets.sf, "read", no_decode)
        assert prepare_arms(ds, ["audio", "silence"], tmp_path / "run2" / "wire", cache=cache) == rows
        monkeypatch.setattr(sets.sf, "read", real_read)
        gone = sorted(entries)[0]
        (cache / gone).unlink()
        assert prepare_arms(ds, ["audio", "silence"], tmp_path / "run3" / "wire", cache=cache) == rows
        assert (cache / gone).read_bytes() == entries[gone]
