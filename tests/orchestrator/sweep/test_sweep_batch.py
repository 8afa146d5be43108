"""A batch of points in one AIPerf process: each load asks the items a one-load run asks, under session ids
of its own (AIPerf groups rows by session id), read back to the item and arm."""

from __future__ import annotations

import pytest

from orchestrator.base.errors import DatasetError
from orchestrator.dataset import ArmRequest
from orchestrator.sweep.batch import batch_rows, parse_batch_key, phase_name


def _row(item: str) -> ArmRequest:
    return ArmRequest(key=f"{item}.audio", item_id=item, arm="audio", text="q", audio_path="/a.wav",
                      source_format="wav", wire_format="wav", audio_seconds=1.0, audio_bytes=10)


class TestBatchRows:
    def test_each_load_asks_the_first_rows_under_its_own_session_ids(self) -> None:
        rows = [_row(f"item-{i}") for i in range(5)]
        out = batch_rows(rows, loads=3, per_load=4)
        assert [r.item_id for r in out] == ["item-0", "item-1", "item-2", "item-3"] * 3
        assert len({r.key for r in out}) == 12  # no two rows share a session
        assert {parse_batch_key(r.key) for r in out[4:8]} == {(f"item-{i}", "audio") for i in range(4)}

    def test_a_load_longer_than_the_rows_wraps_with_new_sessions(self) -> None:
        rows = [_row("a"), _row("b")]
        out = batch_rows(rows, loads=2, per_load=3)
        assert [r.item_id for r in out] == ["a", "b", "a", "a", "b", "a"]
        assert len({r.key for r in out}) == 6

    def test_keys_read_back(self) -> None:
        assert parse_batch_key("count-000.audio~3") == ("count-000", "audio")
        assert parse_batch_key("count-000.transcript") == ("count-000", "transcript")  # an unmarked key as is
        with pytest.raises(DatasetError):
            parse_batch_key("count-000.audio~x")
        assert phase_name("m/rate1.5-2") == "rate1_5-2" and phase_name("m/baseline") == "baseline"
