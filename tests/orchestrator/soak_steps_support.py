"""Stand-ins for the soak windows step's neighbours: a join that records what it is asked, and a bus that keeps
what is published."""

from __future__ import annotations

import time
from typing import TypeVar

import msgspec

from orchestrator.events import AccountingChecked, Event

__all__ = ["RecordingJoin", "RecordingSink"]

E = TypeVar("E", bound=Event)


class RecordingJoin:
    """The join as the windows step sees it, recording closes, discards and tails (nothing is held back; a tail
    holds nothing)."""

    def __init__(self) -> None:
        self.closed: list[tuple[str, bool]] = []
        self.discarded: list[str] = []
        self.tails: list[str] = []

    async def close_window(self, window: str, *, timeout_s: float | None = None,
                           carry: bool = False) -> AccountingChecked:
        self.closed.append((window, carry))
        return AccountingChecked(window=window, balanced=True)

    async def discard_window(self, window: str) -> bool:
        self.discarded.append(window)
        return True

    def open_tail(self, window: str) -> None:
        self.tails.append(window)


class RecordingSink:
    """The bus as a publisher: each event stamped with the next seq and the time, and kept in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def publish(self, event: E) -> E:
        stamped = msgspec.structs.replace(event, seq=len(self.events) + 1, ts_ns=time.time_ns())
        self.events.append(stamped)
        return stamped
