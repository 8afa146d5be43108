"""Fault injection for orchestrator tests: crash, worker crash, hang, latency, error rate, slow start,
memory leak, wrong answers to one kind of question.

All off by default. The state is touched only from the event loop thread (no locking needed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["FaultSettings", "FaultState", "WRONG_ANSWER"]

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
    latency_ms: float = 0.0  # added inside every engine call (so it counts in model_call_ms)
    error_rate: float = 0.0  # share of chat requests answered 500, on an exact deterministic pattern
    startup_delay_s: float = 0.0  # sleep before loading the engine (the port stays closed)
    leak_mib: float = 0.0  # MiB kept forever per chat request
    # Questions routed to these analyses (router.Kind values) get WRONG_ANSWER: whole, and wrong.
    wrong_kinds: tuple[str, ...] = ()

    @property
    def active(self) -> list[str]:
        names = []
        for name in ("crash_after", "worker_crash_after", "hang_after"):
            if getattr(self, name) is not None:
                names.append(name)
        for name in ("latency_ms", "error_rate", "startup_delay_s", "leak_mib", "wrong_kinds"):
            if getattr(self, name):
                names.append(name)
        return names


@dataclass(slots=True)
class FaultState:
    """Counts chat requests and decides, per request, which fault applies."""

    settings: FaultSettings
    seen: int = 0
    hanging: bool = False
    _leaked: list[bytearray] = field(default_factory=list)

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
