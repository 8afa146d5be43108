"""Fault injection for orchestrator tests: crash, worker crash, hang, latency, error rate, slow start,
memory leak, wrong answers to one kind of question or to a share of items.

All off by default. The state is touched only from the event loop thread (no locking needed).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field

__all__ = ["FaultSettings", "FaultState", "WRONG_ANSWER", "item_draw"]

# A complete sentence that answers no dataset question rightly (no number, choice, word or name in it).
WRONG_ANSWER = "I am not able to tell that from this recording."


@dataclass(frozen=True, slots=True)
class FaultSettings:
    """What to inject; zero / None means off."""

    crash_after: int | None = None  # the chat request after the Nth makes the process exit(70)
    # Each chat request after the Nth kills the replica it lands on, as a TRTMC worker dies: the server
    # keeps running, readiness turns degraded (some replicas left) or 503 not_ready (none left).
    worker_crash_after: int | None = None
    hang_after: int | None = None  # after N chat requests every route (health too) stops answering
    latency_ms: float = 0.0  # added inside engine calls (so it counts in model_call_ms); every call unless:
    latency_share: float = 1.0  # only this seeded share of chat requests (drawn per request, seed 0)
    latency_item_share: float = 1.0  # only this share of items, chosen by item_draw (the same items every time)
    error_rate: float = 0.0  # share of chat requests answered 500, on an exact deterministic pattern
    startup_delay_s: float = 0.0  # sleep before loading the engine (the port stays closed)
    leak_mib: float = 0.0  # MiB kept forever per chat request
    # Questions routed to these analyses (router.Kind values) get WRONG_ANSWER: whole, and wrong.
    wrong_kinds: tuple[str, ...] = ()
    # This share of items (an item: its audio and its question) gets WRONG_ANSWER, chosen by item_draw.
    wrong_item_share: float = 0.0

    @property
    def active(self) -> list[str]:
        names = []
        for name in ("crash_after", "worker_crash_after", "hang_after"):
            if getattr(self, name) is not None:
                names.append(name)
        for name in ("latency_ms", "error_rate", "startup_delay_s", "leak_mib", "wrong_kinds",
                     "wrong_item_share"):
            if getattr(self, name):
                names.append(name)
        names += [n for n in ("latency_share", "latency_item_share") if self.latency_ms and getattr(self, n) < 1.0]
        return names


@dataclass(slots=True)
class FaultState:
    """Counts chat requests and decides, per request, which fault applies."""

    settings: FaultSettings
    seen: int = 0
    hanging: bool = False
    _leaked: list[bytearray] = field(default_factory=list)
    # Fixed seed: the same server run slows the same request numbers (AIPerf's order decides which items).
    _latency_draws: random.Random = field(default_factory=lambda: random.Random(0))

    def admit(self) -> str | None:
        """Count one chat request; returns "crash", "worker_crash", "hang", "error" or None (no fault)."""
        self.seen += 1
        s = self.settings
        if s.crash_after is not None and self.seen > s.crash_after:
            return "crash"
        if s.worker_crash_after is not None and self.seen > s.worker_crash_after:
            return "worker_crash"
        if s.hang_after is not None and self.seen > s.hang_after:
            self.hanging = True
            return "hang"
        if s.leak_mib > 0:
            block = bytearray(int(s.leak_mib * 1024 * 1024))
            block[::4096] = b"\x01" * len(block[::4096])  # touch every page so RSS grows
            self._leaked.append(block)
        # Request n fails when floor(n*rate) steps up: exactly rate*n failures after n requests.
        if s.error_rate > 0 and math.floor(self.seen * s.error_rate) > math.floor(
                (self.seen - 1) * s.error_rate):
            return "error"
        return None

    def latency_s(self, audio: bytes | None, question: str) -> float:
        """The latency to add to this engine call: --fault-latency-ms for the chosen items and requests."""
        s = self.settings
        if s.latency_ms <= 0:
            return 0.0
        # Draw for every request whatever the item, so the request share does not depend on the item share.
        request_slow = self._latency_draws.random() < s.latency_share
        item_slow = s.latency_item_share >= 1.0 or item_draw(audio, question) < s.latency_item_share
        return s.latency_ms / 1000.0 if request_slow and item_slow else 0.0

    def wrong_item(self, audio: bytes | None, question: str) -> bool:
        """Whether this item is among the --fault-wrong-item-share answered wrongly."""
        share = self.settings.wrong_item_share
        return share > 0 and item_draw(audio, question) < share


def item_draw(audio: bytes | None, question: str) -> float:
    """A number in [0, 1) fixed by the request's audio bytes and its question: the same item draws the
    same number on every request and in every server, whatever the order of requests, so a wrong-item
    share picks the same items in the correctness stage, under load and in a rerun."""
    h = hashlib.sha256()
    h.update(audio or b"")
    h.update(b"\0")
    h.update(question.encode())
    return int.from_bytes(h.digest()[:8], "big") / 2 ** 64
