"""The reference server's planted slowness: --fault-latency-share slows a seeded share of requests,
--fault-latency-item-share the same share of items on every request."""

from __future__ import annotations

import argparse

import pytest

from adapters.reference.faults import FaultSettings, FaultState, item_draw
from adapters.reference.serve import add_server_arguments, settings_from_args


def _parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_server_arguments(p)
    return p.parse_args(["--model-name", "m", *argv])


ITEMS = [(bytes([i % 256, i // 256]) * 50, f"question {i % 7}") for i in range(2000)]


class TestLatencyShares:
    def test_flags_parse_bounded_and_active(self) -> None:
        """Both shares take 0..1 and list themselves as active only beside --fault-latency-ms."""
        args = _parse("--fault-latency-ms", "400", "--fault-latency-share", "0.15")
        assert settings_from_args(args).faults.active == ["latency_ms", "latency_share"]
        bad = _parse("--fault-latency-item-share", "1.2")
        with pytest.raises(ValueError, match=r"--fault-latency-item-share 1.2 must be within 0..1"):
            settings_from_args(bad)

    def test_request_share_is_met_and_seeded(self) -> None:
        """A request share of 0.15 slows 15 % of 2000 requests (within 2 points), the same requests in two servers."""
        def slowed() -> list[int]:
            state = FaultState(FaultSettings(latency_ms=2000, latency_share=0.15))
            return [i for i, (audio, q) in enumerate(ITEMS) if state.latency_s(audio, q) == 2.0]

        first = slowed()
        assert abs(len(first) / len(ITEMS) - 0.15) < 0.02 and slowed() == first

    def test_item_share_slows_the_same_items_every_time(self) -> None:
        """An item share of 0.4 slows exactly the items whose draw is below 0.4, on every request."""
        state = FaultState(FaultSettings(latency_ms=1000, latency_item_share=0.4))
        expected = {i for i, (audio, q) in enumerate(ITEMS) if item_draw(audio, q) < 0.4}
        for _ in range(2):
            assert {i for i, (audio, q) in enumerate(ITEMS) if state.latency_s(audio, q) == 1.0} == expected
        assert abs(len(expected) / len(ITEMS) - 0.4) < 0.03
        assert FaultState(FaultSettings(latency_ms=400)).latency_s(b"clip", "q") == 0.4
        assert FaultState(FaultSettings()).latency_s(b"clip", "q") == 0.0
