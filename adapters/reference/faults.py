"""Fault injection for orchestrator tests: crash, worker crash, hang, latency, error rate, slow start,
memory leak, wrong answers to one kind of question or to a share of items, swapped or cut answers under load.
All off by default. The state is touched only from the event loop thread (no locking needed)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

__all__ = ["FaultSettings", "FaultState", "WRONG_ANSWER", "item_draw", "request_draw", "under_load"]

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
    latency_share: float = 1.0  # only this share of chat requests, chosen by request_draw (a hash of the id)
    latency_item_share: float = 1.0  # only this share of items, chosen by item_draw (the same items every time)
    error_rate: float = 0.0  # share of chat requests answered 500, on an exact deterministic pattern
    startup_delay_s: float = 0.0  # sleep before loading the engine (the port stays closed)
    leak_mib: float = 0.0  # MiB kept forever per chat request
    # Questions routed to these analyses (router.Kind values) get WRONG_ANSWER: whole, and wrong.
    wrong_kinds: tuple[str, ...] = ()
    # This share of items (an item: its audio and its question) gets WRONG_ANSWER, chosen by item_draw.
    wrong_item_share: float = 0.0
    # With more than N chat requests in flight, answer with the previous request's answer (swap) or with
    # the first half of its own, not marked truncated (truncate): a server that stays fast by cheating.
    swap_above: int | None = None
    truncate_above: int | None = None

    @property
    def active(self) -> list[str]:
        names = []
        for name in ("crash_after", "worker_crash_after", "hang_after", "swap_above", "truncate_above"):
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
    last_text: str = ""  # the previous engine answer, for --fault-swap-above
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

    def latency_s(self, request_id: str | None, audio: bytes | None, question: str) -> float:
        """The latency to add to this engine call: --fault-latency-ms for the chosen items and requests.
        `request_id`: the client's X-Request-ID, None where it sent none."""
        s = self.settings
        if s.latency_ms <= 0:
            return 0.0
        request_slow = s.latency_share >= 1.0 or request_draw(request_id, audio, question) < s.latency_share
        item_slow = s.latency_item_share >= 1.0 or item_draw(audio, question) < s.latency_item_share
        return s.latency_ms / 1000.0 if request_slow and item_slow else 0.0

    def wrong_item(self, audio: bytes | None, question: str) -> bool:
        """Whether this item is among the --fault-wrong-item-share answered wrongly."""
        share = self.settings.wrong_item_share
        return share > 0 and item_draw(audio, question) < share


def under_load(settings: FaultSettings, state: FaultState, active: int, text: str) -> str:
    """The answer text the overload faults leave (`active`: chat requests in flight, this one included)."""
    previous, state.last_text = state.last_text, text
    if settings.swap_above is not None and active > settings.swap_above and previous:
        return previous
    if settings.truncate_above is not None and active > settings.truncate_above:
        words = text.split()
        return " ".join(words[:max(1, len(words) // 2)])
    return text


def item_draw(audio: bytes | None, question: str) -> float:
    """A number in [0, 1) fixed by the request's audio bytes and its question: the same item draws the
    same number on every request and in every server, whatever the order of requests, so a wrong-item
    share picks the same items in the correctness stage, under load and in a rerun."""
    h = hashlib.sha256()
    h.update(audio or b"")
    h.update(b"\0")
    h.update(question.encode())
    return int.from_bytes(h.digest()[:8], "big") / 2 ** 64


def request_draw(request_id: str | None, audio: bytes | None, question: str) -> float:
    """A number in [0, 1) fixed by the request's id: a share of requests chosen by it is that share, give or
    take sampling, in every block, run and server start, whatever came before (a seeded stream restarted with
    each server gives every fresh server the same first draws). Without an id, by the request's content; the
    salt keeps it apart from item_draw, so a request share and an item share choose independently."""
    h = hashlib.sha256(b"aqbench fault request share\0")
    if request_id:
        h.update(request_id.encode())
    else:
        h.update(b"\1")
        h.update(audio or b"")
        h.update(b"\0")
        h.update(question.encode())
    return int.from_bytes(h.digest()[:8], "big") / 2 ** 64
