"""The reference server's planted slowness: --fault-latency-share slows the requests whose id hashes below the
share (by content where a request has no id), --fault-latency-item-share the same share of items on every request."""

from __future__ import annotations

import argparse
import random
import uuid

import pytest
from scipy.stats import binom

from adapters.reference.faults import FaultSettings, FaultState, item_draw, request_draw
from adapters.reference.serve import add_server_arguments, settings_from_args

pytestmark = pytest.mark.inprocess  # fault draws and flag parsing only: no server, no AIPerf


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

    def test_request_share_holds_in_every_fresh_server_block(self) -> None:
        """ab's shape: 400 blocks of 44 requests, each to a freshly started server (a new FaultState), ids as
        AIPerf makes them (uuid4): a share of 0.15 slows 15 % in all (within 1 point), the blocks' counts
        follow Binomial(44, 0.15) (no block starts with a fixed run of misses), and the same id is chosen
        the same way by every server."""
        draw = random.Random(7)
        counts, first_22 = [], []
        for _block in range(400):
            state = FaultState(FaultSettings(latency_ms=2000, latency_share=0.15))
            ids = [str(uuid.UUID(int=draw.getrandbits(128), version=4)) for _ in range(44)]
            slowed = [state.latency_s(rid, b"clip", "q") == 2.0 for rid in ids]
            counts.append(sum(slowed))
            first_22.append(sum(slowed[:22]))
        assert abs(sum(counts) / (400 * 44) - 0.15) < 0.01
        # Binomial(44, 0.15): P(X <= 2) = 3.3 %, P(X >= 11) = 6.0 %; seeded draws put every block at 3.
        assert 4 <= sum(c <= 2 for c in counts) <= 26 and 10 <= sum(c >= 11 for c in counts) <= 40, counts
        assert sum(c == 0 for c in first_22) <= 2 * 400 * binom.pmf(0, 22, 0.15) + 5  # 2.8 % expected
        again = FaultState(FaultSettings(latency_ms=2000, latency_share=0.15))
        assert [again.latency_s(rid, b"clip", "q") for rid in ids] == [2.0 if s else 0.0 for s in slowed]

    def test_without_an_id_the_content_decides(self) -> None:
        """A request without an X-Request-ID is chosen by its audio and question (the same content, the same
        choice), by a draw of its own: a request share does not pick the items an item share would."""
        state = FaultState(FaultSettings(latency_ms=2000, latency_share=0.4))
        chosen = [i for i, (audio, q) in enumerate(ITEMS) if state.latency_s(None, audio, q) == 2.0]
        assert chosen == [i for i, (audio, q) in enumerate(ITEMS) if request_draw(None, audio, q) < 0.4]
        assert abs(len(chosen) / len(ITEMS) - 0.4) < 0.03
        by_item = {i for i, (audio, q) in enumerate(ITEMS) if item_draw(audio, q) < 0.4}
        assert abs(len(by_item & set(chosen)) / len(ITEMS) - 0.16) < 0.03  # independent: 0.4 x 0.4

    def test_item_share_slows_the_same_items_every_time(self) -> None:
        """An item share of 0.4 slows exactly the items whose draw is below 0.4, on every request."""
        state = FaultState(FaultSettings(latency_ms=1000, latency_item_share=0.4))
        expected = {i for i, (audio, q) in enumerate(ITEMS) if item_draw(audio, q) < 0.4}
        for _ in range(2):
            assert {i for i, (audio, q) in enumerate(ITEMS) if state.latency_s(None, audio, q) == 1.0} == expected
        assert abs(len(expected) / len(ITEMS) - 0.4) < 0.03
        assert FaultState(FaultSettings(latency_ms=400)).latency_s("r-1", b"clip", "q") == 0.4
        assert FaultState(FaultSettings()).latency_s("r-1", b"clip", "q") == 0.0
