"""Arms, wire preparation, session keys and the AIPerf single_turn export of the shipped set."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from aiperf.dataset import utils as aiperf_utils
from aiperf.dataset.loader.models import SingleTurn
from aiperf.dataset.loader.single_turn import SingleTurnDatasetLoader

from orchestrator.base.errors import DatasetError
from orchestrator.dataset import load_dataset, parse_session_key, prepare_arms, session_key, write_aiperf_input

SHIPPED = Path(__file__).resolve().parents[3] / "datasets" / "audioqa-v1"
ARMS = ["audio", "silence", "transcript"]


@pytest.fixture(scope="module")
def ds():
    return load_dataset(SHIPPED)


@pytest.fixture(scope="module")
def prepared(ds, tmp_path_factory):
    work = tmp_path_factory.mktemp("arms")
    return work, prepare_arms(ds, ARMS, work)


def _pcm_sha(path: str) -> str:
    pcm, _ = sf.read(path, dtype="int16", always_2d=True)
    return hashlib.sha256(np.ascontiguousarray(pcm, dtype="<i2").tobytes()).hexdigest()


class TestSessionKey:
    def test_round_trip(self) -> None:
        """Every item id and arm survives session_key -> parse_session_key unchanged."""
        for item_id in ("count-beeps-5", "a", "x-1-2"):
            for arm in ARMS:
                assert parse_session_key(session_key(item_id, arm)) == (item_id, arm)

    @pytest.mark.parametrize("key", ["count-beeps-5", "count-beeps-5.video", ".audio", "Bad.audio", ""])
    def test_foreign_keys_rejected(self, key: str) -> None:
        """Keys that are not '<item id>.<arm>' raise, naming the key."""
        with pytest.raises(DatasetError, match="session key"):
            parse_session_key(key)

    def test_bad_inputs_rejected(self) -> None:
        """An unknown arm or an id outside the id pattern cannot become a key."""
        with pytest.raises(DatasetError, match="arm 'video' is not one of audio, silence, transcript"):
            session_key("x", "video")
        with pytest.raises(DatasetError, match="item id 'a.b'"):
            session_key("a.b", "audio")


class TestPrepareArms:
    def test_arms_per_item(self, ds, prepared) -> None:
        """Audio and silence for every item, transcript only for items with a transcript; keys unique."""
        _, reqs = prepared
        keys = [r.key for r in reqs]
        assert len(keys) == len(set(keys))
        speech = sum(it.transcript is not None for it in ds.items)
        assert len(reqs) == 2 * len(ds.items) + speech
        for it in ds.items:
            arms = [r.arm for r in reqs if r.item_id == it.id]
            assert arms == (ARMS if it.transcript else ["audio", "silence"])

    def test_wire_formats(self, ds, prepared) -> None:
        """WAV/MP3 clips go out as the dataset file; FLAC/OGG are decoded to WAV with the same PCM."""
        work, reqs = prepared
        for r in reqs:
            if r.arm != "audio":
                continue
            it = ds.item(r.item_id)
            assert Path(r.audio_path).is_absolute() and r.source_format == it.container
            if it.container in ("wav", "mp3"):
                assert Path(r.audio_path) == (SHIPPED / it.audio).resolve() and r.wire_format == it.container
            else:
                assert r.wire_format == "wav" and Path(r.audio_path).is_relative_to(work)
                assert _pcm_sha(r.audio_path) == it.pcm_sha256
                assert sf.info(r.audio_path).samplerate == it.sample_rate_hz
            assert r.audio_bytes == Path(r.audio_path).stat().st_size
            assert r.audio_seconds == pytest.approx(it.duration_s, abs=1e-6)

    def test_silence_matches_shape(self, ds, prepared) -> None:
        """The silence arm is an all-zero WAV with the clip's rate, channels and frames."""
        _, reqs = prepared
        for r in reqs:
            if r.arm != "silence":
                continue
            it = ds.item(r.item_id)
            x, rate = sf.read(r.audio_path, dtype="int16", always_2d=True)
            assert (rate, x.shape) == (it.sample_rate_hz, (it.frames, it.channels)) and not x.any()
            assert r.text == it.question and r.wire_format == "wav"

    def test_transcript_arm_has_no_audio(self, ds, prepared) -> None:
        """The transcript arm carries the transcript before the question and no audio."""
        _, reqs = prepared
        for r in (r for r in reqs if r.arm == "transcript"):
            it = ds.item(r.item_id)
            assert r.audio_path is None and r.wire_format is None and r.audio_bytes == 0
            assert r.text.index(it.transcript) < r.text.index(it.question)

    def test_deterministic(self, ds, prepared, tmp_path: Path) -> None:
        """A second preparation in another folder writes byte-identical wire files."""
        work, first = prepared
        again = prepare_arms(ds, ARMS, tmp_path)
        assert [(r.key, r.text, r.audio_bytes) for r in again] == [(r.key, r.text, r.audio_bytes) for r in first]
        for a, b in zip(first, again, strict=True):
            if a.audio_path and Path(a.audio_path).is_relative_to(work):
                assert Path(a.audio_path).read_bytes() == Path(b.audio_path).read_bytes()

    def test_unknown_arm(self, ds, tmp_path: Path) -> None:
        """An arm outside audio/silence/transcript is refused."""
        with pytest.raises(DatasetError, match="arm 'video'"):
            prepare_arms(ds, ["video"], tmp_path)


class TestAiperfExport:
    def test_lines_accepted_by_aiperf_single_turn(self, prepared, tmp_path: Path) -> None:
        """Every exported line validates as AIPerf's SingleTurn, keeps its session_id, and AIPerf opens its audio."""
        _, reqs = prepared
        path = write_aiperf_input(reqs, tmp_path / "inputs" / "single_turn.jsonl")
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        assert len(lines) == len(reqs)
        for line, req in zip(lines, reqs, strict=True):
            assert SingleTurnDatasetLoader.can_load(line)
            turn = SingleTurn.model_validate(line)
            assert turn.session_id == req.key and turn.text == req.text
            if req.arm == "transcript":
                assert "audio" not in line and turn.audio is None
            else:
                _, fmt = aiperf_utils.open_audio(turn.audio)
                assert str(fmt) == req.wire_format
