"""The soak's windows step: it opens windows on the bus, closes them through a join stand-in and the tracker,
and journals each summary; what the load never reached is dropped."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from soak_steps_support import RecordingJoin, RecordingSink

from orchestrator.config import CorrectnessCriteria
from orchestrator.events import RequestCorrelated, SoakWindowClosed, SoakWindowOpened
from orchestrator.soak import SoakTracker
from orchestrator.soak.cutter import WindowCutter
from orchestrator.soak.progress import LoadProgress
from orchestrator.soak.segment import Cut

S = 10**9
RUN = "soak/aiperf01"







def _step(stopped_at: dict[str, int] | None = None) -> tuple[WindowCutter, RecordingJoin, RecordingSink, SoakTracker]:
    model = SimpleNamespace(correctness=CorrectnessCriteria(min_pass_rate=0.5), name="m")
    tracker = SoakTracker(None, None, model)  # type: ignore[arg-type]
    join, sink = RecordingJoin(), RecordingSink()
    step = WindowCutter(sink, join, tracker, LoadProgress(None), window_s=60.0,  # type: ignore[arg-type]
                       stopped_at=stopped_at or {})
    return step, join, sink, tracker


def _request(window: str, start_ns: int) -> RequestCorrelated:
    return RequestCorrelated(request_id=f"r{start_ns}", window=window, phase="profiling", ok=False, cause="http_5xx",
                             request_start_ns=start_ns, request_end_ns=start_ns + S // 10)


@pytest.mark.anyio
async def test_a_close_on_time_carries_through_the_join_and_journals_the_summary() -> None:
    step, join, sink, tracker = _step()
    t0 = time.time_ns()
    cuts: list[Cut] = []
    await step.open(t0, 1, cuts, t0 + 60 * S)
    await step.open(t0 + 60 * S, 1, cuts, t0 + 120 * S)
    list(tracker._handle(_request("soak/w0001", t0 + S)))
    stats = await step.close(cuts[0], RUN, launch_ns=t0, exit_ns=None, carry_by_ns=time.time_ns())
    assert join.closed == [("soak/w0001", True)]
    assert [type(e) for e in sink.events] == [SoakWindowOpened, SoakWindowOpened, SoakWindowClosed]
    closed = sink.events[-1]
    assert isinstance(closed, SoakWindowClosed) and closed.summary == stats and stats.issued == 1
    assert (step.done, step.sent, step.closed_seq, step.cut_short) == (1, 1, 3, set())


@pytest.mark.anyio
async def test_after_the_load_ends_the_reached_windows_close_and_the_rest_are_dropped() -> None:
    """The last window the load reached closes as the segment's last (AIPerf's exit and outcome on it); a cut
    past it is discarded through the join and forgotten by the tracker. A stop before a window's end cuts it short."""
    t0 = time.time_ns()
    step, join, sink, tracker = _step(stopped_at={RUN: t0 + 90 * S})
    cuts: list[Cut] = []
    for k in range(3):
        await step.open(t0 + k * 60 * S, 1, cuts, t0 + (k + 1) * 60 * S)
    list(tracker._handle(_request("soak/w0001", t0 + S)))
    list(tracker._handle(_request("soak/w0002", t0 + 61 * S)))
    lasts: list[bool] = []

    async def closed(last: bool) -> None:
        lasts.append(last)

    outcome = SimpleNamespace(classification="partial")
    await step.close_rest(cuts, RUN, launch_ns=t0, exit_ns=t0 + 95 * S, outcome=outcome,  # type: ignore[arg-type]
                          closed=closed)
    assert lasts == [False, True] and join.discarded == ["soak/w0003"] and tracker.window("soak/w0003") is None
    first, second = (e.summary for e in sink.events if isinstance(e, SoakWindowClosed))
    assert first is not None and second is not None
    assert first.aiperf_exit_unix_ns is None and first.aiperf_launch_unix_ns is None
    assert second.aiperf_exit_unix_ns == t0 + 95 * S and second.aiperf_classification == "partial"
    assert step.cut_short == {"soak/w0002"} and step.done == 2

