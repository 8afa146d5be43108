"""A soak segment's bookkeeping: the window cuts, the AIPerf runs beneath one window schedule, their exits."""

from __future__ import annotations

import time
from pathlib import Path

import anyio

from orchestrator.dataset import ArmRequest
from orchestrator.soak.window import window_name
from orchestrator.spine.ports import AiperfFacts, AiperfResult, HandoverControl
from orchestrator.supervision.supervisor import ServerHandle

__all__ = ["Cut", "Exit", "SegmentRuns", "Launch", "aiperf_run_name"]


def aiperf_run_name(number: int) -> str:
    """`soak/aiperf01`: the name AIPerf run `number` journals its records under (windows cut them)."""
    return f"soak/aiperf{number:02d}"


class Cut:
    """One window's time cut: its start and its planned end (None until the first request fixes it)."""

    __slots__ = ("end_ns", "index", "name", "start_ns")

    def __init__(self, index: int, start_ns: int) -> None:
        self.index, self.name, self.start_ns = index, window_name(index), start_ns
        self.end_ns: int | None = None


class Exit:
    """When one AIPerf process ended (wall clock)."""

    def __init__(self) -> None:
        self._event = anyio.Event()
        self.unix_ns: int | None = None

    def set(self) -> None:
        if not self._event.is_set():
            self.unix_ns = time.time_ns()
            self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()


# A segment is one window schedule, fixed from its first profiling request; the AIPerf processes that send its
# load come and go beneath it (soak/handover_cue.py): two are live during a handover. A new segment starts
# only when the load ended early (a failure), with a judged gap.
class SegmentRuns:
    """The AIPerf runs of one segment: which sent (the windows wait for their requests), which is sending
    now, which are live, their controls, exits, stops and results. `done` is set once none is live."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.sending = ""
        self.live: set[str] = set()
        self.abandoned: set[str] = set()  # successors that never became ready: stopped, not accounted
        self.controls: dict[str, HandoverControl] = {}
        self.exits: dict[str, Exit] = {}
        self.finished: dict[str, anyio.Event] = {}  # set once a run's files are judged
        self.stops: dict[str, anyio.Event] = {}
        self.outcome: dict[str, AiperfResult] = {}
        self.end_ns: int | None = None  # the segment's planned end of load (wall clock)
        self.done = anyio.Event()

    def send(self, name: str) -> None:
        """`name` sends from now on (its requests count in the windows)."""
        self.names.append(name)
        self.sending = name


class Launch:
    """What every AIPerf run of a segment is launched with."""

    def __init__(self, install: AiperfFacts, tokenizer: Path, rows: list[ArmRequest], handle: ServerHandle,
                 sent_before: int) -> None:
        self.install, self.tokenizer, self.rows, self.handle = install, tokenizer, rows, handle
        self.sent_before = sent_before  # requests of the windows closed before the segment began
