"""A segment's last window closes on time too: once its AIPerf run has said what it sent and all of it is seen, or
0.5 s after its end with what is still open counted once in the run's tail (SoakTail); never told, at the exit."""

from __future__ import annotations

import time
from types import SimpleNamespace

import anyio
import msgspec
import pytest
from soak_steps_support import RecordingJoin, RecordingSink

from orchestrator.config import CorrectnessCriteria
from orchestrator.correlate import Joiner
from orchestrator.events import (
    AccountingChecked,
    AiperfExited,
    AiperfRunFact,
    AiperfStarted,
    ClientRecord,
    Event,
    LogLine,
    RequestCorrelated,
    ServerRecord,
    SoakTail,
    SoakWindowClosed,
    WindowStats,
)
from orchestrator.reports.soak import fold_soak, render_soak_markdown
from orchestrator.soak import SoakTracker
from orchestrator.soak.closing import wait_last_closable
from orchestrator.soak.cutter import WindowCutter, tail_name
from orchestrator.soak.load_coverage import accounting
from orchestrator.soak.progress import LoadProgress, profiling_sent
from orchestrator.soak.segment import Cut, SegmentRuns
from orchestrator.spine.bus import Bus

S = 1_000_000_000
T0 = 1_800_000_000 * S
RUN = "soak/aiperf01"
# AIPerf 0.13.0's own line (from a soak's journal), its clock and source stripped of nothing.
SENT_LINE = ("11:55:28.739 NOTICE   Phase profiling (profiling) sending complete | sent={n}, completed={n}, "
             "in_flight=0 | sessions: sent={n}, completed={n} | timeout_triggered=True (runner.py:1103)")


def _sent(n: int) -> LogLine:
    return LogLine(source="aiperf", stream="aiperf", text=SENT_LINE.format(n=n), level="notice")


def _record(session: int, issued_ns: int, run: str = RUN) -> ClientRecord:
    return ClientRecord(request_id=f"{run}-{session}", aiperf_run=run, phase="profiling", session_num=session,  # type: ignore[arg-type]
                        credit_issued_ns=issued_ns, request_start_ns=issued_ns + 1000, request_end_ns=issued_ns + 2000)


def _started(run: str = RUN) -> AiperfStarted:
    return AiperfStarted(source="aiperf", window=run, argv=[], shell="", artifact_dir="", pid=1)


def test_the_sent_count_is_read_from_the_profiling_phase_line_only() -> None:
    assert profiling_sent(SENT_LINE.format(n="1,239")) == 1239
    assert profiling_sent(SENT_LINE.format(n=4).replace("profiling (profiling)", "warmup (warmup)")) is None
    assert profiling_sent("Phase profiling (profiling) started | phase_index=1") is None







async def _last_window(feed: list[Event], *, after_s: float = 1.5) -> tuple[list[Event], RecordingJoin, float | None, int]:
    """One segment of one window ending 0.3 s from now, its AIPerf run's events `feed` published on the bus; the
    run ends just after the window closes, or `after_s` after the window's end if it has not. Returns the windows
    step's events, the join, when the window closed (s after its end; None: not before the run ended) and how
    many windows closed on time."""
    bus = Bus("tail")
    progress = LoadProgress(bus)
    model = SimpleNamespace(correctness=CorrectnessCriteria(min_pass_rate=0.5), name="m")
    tracker = SoakTracker(None, None, model)  # type: ignore[arg-type]
    join, sink = RecordingJoin(), RecordingSink()
    step = WindowCutter(sink, join, tracker, progress, window_s=60.0, stopped_at={})  # type: ignore[arg-type]
    end = time.time_ns() + 3 * S // 10
    cuts: list[Cut] = []
    await step.open(end - 60 * S, 1, cuts, end)
    list(tracker._handle(RequestCorrelated(request_id="r", window="soak/w0001", phase="profiling", ok=False,
                                           cause="http_5xx", request_start_ns=end - S, request_end_ns=end - S // 2)))
    runs = SegmentRuns()
    runs.send(RUN)
    runs.live.add(RUN)
    closed_at: list[float] = []
    on_time = 0
    async with anyio.create_task_group() as tg:
        await tg.start(progress.run)
        for ev in [_started(), *feed]:
            await bus.publish(ev)

        async def closes() -> None:
            nonlocal on_time
            on_time = await step.close_on_time(cuts, 1, runs, launch_ns=end - 61 * S,
                                               closed=lambda: closed_at.append((time.time_ns() - end) / 1e9))

        tg.start_soon(closes)
        with anyio.move_on_after(max(0.0, (end - time.time_ns()) / 1e9 + after_s)):
            while not closed_at:
                await anyio.sleep(0.01)
        exit_ns = time.time_ns()
        await bus.publish(AiperfExited(source="aiperf", window=RUN, returncode=0, classification="complete"))
        runs.done.set()
        await anyio.wait_all_tasks_blocked()

        async def after(last: bool) -> None:
            assert last

        outcome = SimpleNamespace(classification="complete")
        await step.close_rest(cuts[on_time:], RUN, launch_ns=end - 61 * S, exit_ns=exit_ns,
                              outcome=outcome, closed=after)  # type: ignore[arg-type]
        tg.cancel_scope.cancel()
    return sink.events, join, closed_at[0] if closed_at else None, on_time


@pytest.mark.anyio
class TestTheLastWindow:
    async def test_it_closes_before_the_exit_once_sent_is_told_and_every_session_is_seen(self) -> None:
        """AIPerf said sent=3 (before the window's end) and sessions 0..2 are seen: the window closes at its end,
        before the run's exit; the tail then holds nothing and tells how the run ended."""
        now = time.time_ns()
        events, join, closed_s, on_time = await _last_window([_record(0, now), _record(2, now), _record(1, now),
                                                              _sent(3)])
        assert on_time == 1 and closed_s is not None and 0 <= closed_s < 0.2, closed_s
        assert join.tails == [tail_name("soak/w0001")] and join.closed == [("soak/w0001", True)]
        closed = [e for e in events if isinstance(e, SoakWindowClosed)]
        [tail] = [e for e in events if isinstance(e, SoakTail)]
        assert len(closed) == 1 and closed[0].summary is not None and closed[0].summary.aiperf_exit_unix_ns is None
        assert (tail.window, tail.issued, tail.balanced, tail.aiperf_classification) == ("soak/w0001", 0, True,
                                                                                       "complete")
        assert tail.aiperf_exit_unix_ns is not None and tail.seq > closed[0].seq

    async def test_a_request_still_open_closes_it_at_the_bounded_wait(self) -> None:
        """sent=3 but session 1 is still open: the window closes 0.5 s after its end (carrying into the tail)."""
        now = time.time_ns()
        _events, join, closed_s, _ = await _last_window([_record(0, now), _record(2, now), _sent(3)])
        assert closed_s is not None and 0.45 <= closed_s < 1.0, closed_s
        assert join.closed == [("soak/w0001", True)] and join.tails == [tail_name("soak/w0001")]

    async def test_a_run_that_never_says_what_it_sent_closes_it_at_its_exit(self) -> None:
        """No sending-complete line (a killed AIPerf): today's rule, the window closes with the run's exit and
        outcome on it, and there is no tail."""
        now = time.time_ns()
        events, join, closed_s, on_time = await _last_window([_record(0, now), _record(1, now)], after_s=0.8)
        assert closed_s is None and on_time == 0 and join.tails == [] and join.closed == [("soak/w0001", False)]
        [closed] = [e for e in events if isinstance(e, SoakWindowClosed)]
        assert closed.summary is not None and closed.summary.aiperf_classification == "complete"
        assert closed.summary.aiperf_exit_unix_ns is not None
        assert not any(isinstance(e, SoakTail) for e in events)

    async def test_a_load_halted_before_the_end_closes_it_at_the_exit(self) -> None:
        """A decided soak halts its run inside the last window: told and all seen, yet the window does not close
        before its end; the run's exit comes first, and the window closes there, as before."""
        bus = Bus("tail")
        progress = LoadProgress(bus)
        done = anyio.Event()
        async with anyio.create_task_group() as tg:
            await tg.start(progress.run)
            for ev in (_started(), _record(0, T0), _sent(1)):
                await bus.publish(ev)

            async def exit_soon() -> None:
                await anyio.sleep(0.3)
                done.set()

            tg.start_soon(exit_soon)
            began = time.monotonic()
            assert await wait_last_closable(progress, [RUN], time.time_ns() + 5 * S, sent_of=progress.sent_in_all,
                                            done=done) is None
            assert time.monotonic() - began < 2.0
            tg.cancel_scope.cancel()

    async def test_a_line_while_two_runs_are_live_is_nobodys(self) -> None:
        """During a handover's overlap AIPerf's line cannot be told apart: not used (a halt fact tells instead)."""
        bus = Bus("tail")
        progress = LoadProgress(bus)
        async with anyio.create_task_group() as tg:
            await tg.start(progress.run)
            for ev in (_started(), _started("soak/aiperf02"), _sent(5)):
                await bus.publish(ev)
            await bus.publish(AiperfExited(source="aiperf", window="soak/aiperf02", returncode=0, classification="complete"))
            last = await bus.publish(_sent(7))
            await progress.wait_seen(last.seq)
            assert progress.sent == {RUN: 7} and progress.sent_in_all(RUN) == 7
            tg.cancel_scope.cancel()

    async def test_a_successor_taking_over_is_waited_for_too(self) -> None:
        """The runs' list is read afresh: a run that joins it must be told and seen before the window closes."""
        bus = Bus("tail")
        progress = LoadProgress(bus)
        names = [RUN]
        told = {RUN: 1}
        async with anyio.create_task_group() as tg:
            await tg.start(progress.run)
            await bus.publish(_record(0, T0))
            names.append("soak/aiperf02")
            result: list[bool | None] = []

            async def wait() -> None:
                result.append(await wait_last_closable(progress, names, time.time_ns(), sent_of=told.get,
                                                       done=anyio.Event(), wait_s=30.0))

            tg.start_soon(wait)
            await bus.publish(_record(1, T0))
            await anyio.sleep(0.05)
            assert result == []
            told["soak/aiperf02"] = 1
            await bus.publish(_record(0, T0, "soak/aiperf02"))
            with anyio.fail_after(2.0):
                while not result:
                    await anyio.sleep(0.01)
            assert result == [True]
            tg.cancel_scope.cancel()


def _client(rid: str, start: int) -> ClientRecord:
    return ClientRecord(request_id=rid, aiperf_run=RUN, phase="profiling", status_code=200, request_start_ns=start,
                        request_end_ns=start + S // 10, request_latency_ms=100.0, answer="x")


def _server(rid: str, end: int) -> ServerRecord:
    return ServerRecord(request_id=rid, status=200, handler_ms=100.0, incarnation=1, end_unix_ns=end)


def _accounting(events: list[Event]) -> AccountingChecked:
    [acc] = [e for e in events if isinstance(e, AccountingChecked)]
    return acc


class TestTheTailInTheJoin:
    def test_a_late_request_lands_in_the_tail_once(self) -> None:
        """The last window closes on time with a request open (only its client half here): it is not in flight
        there; once its server half comes it counts in the tail, as carried, and both balance."""
        j = Joiner(match_timeout_s=1.0, cut_by_time=True)
        j.start_window("w1", T0)
        j.add_client(_client("done", T0 + S), 0)
        j.add_server(_server("done", T0 + 2 * S), 0)
        j.add_client(_client("late", T0 + 9 * S), 0)
        j.start_window("w1/tail")  # Correlator.open_tail
        acc1 = _accounting(j.close_window("w1", carry=True))
        assert acc1.balanced and acc1.issued == {"profiling": 1} and acc1.in_flight == 0, acc1.problems
        out = j.add_server(_server("late", T0 + 11 * S), 0)
        assert [e.window for e in out] == ["w1/tail"]
        assert j.add_client(msgspec.structs.replace(_client("late", T0 + 9 * S), via="tap"), 0) == []  # merged
        tail = _accounting(j.close_window("w1/tail"))
        assert tail.balanced and tail.issued == {"profiling": 1} and tail.carried == 1, tail.problems

    def test_a_request_still_open_at_the_exit_is_in_flight_in_the_tail(self) -> None:
        """What is still open when the run has ended breaks the tail's invariant, as it broke the last window's
        when that closed at the exit; a server half alone is a breach there too, not lost."""
        j = Joiner(match_timeout_s=1.0, cut_by_time=True)
        j.start_window("w1", T0)
        j.add_client(msgspec.structs.replace(_client("open", T0 + 9 * S), status_code=None), 0)
        j.add_server(_server("alone", T0 + 9 * S), 0)
        j.start_window("w1/tail")
        assert _accounting(j.close_window("w1", carry=True)).balanced
        j.expire(10**18)  # past the match timeout: the server half without its client half settles
        tail = _accounting(j.close_window("w1/tail"))
        assert not tail.balanced and tail.server_without_client == ["alone"], tail


def _window(index: int, issued: int, *, segment: int = 1) -> WindowStats:
    return WindowStats(window=f"soak/w{index:04d}", index=index, start_unix_ns=T0 + index * 60 * S,
                       end_unix_ns=T0 + (index + 1) * 60 * S, issued=issued, ok=issued, accounting_balanced=True,
                       segment=segment)


def _tail(issued: int, *, balanced: bool = True) -> SoakTail:
    return SoakTail(window="soak/w0002", segment=1, aiperf_run=RUN, issued=issued, ok=issued, balanced=balanced,
                    aiperf_classification="complete")


class TestAccountingWithATail:
    WINDOWS = [_window(1, 40), _window(2, 38)]
    RUNS = [AiperfRunFact(segment=1, name=RUN, issued={"profiling": 80}, issued_from={"profiling": "aiperf_log"})]

    def test_windows_plus_tail_balance_the_run(self) -> None:
        verdict = accounting(self.WINDOWS, self.RUNS, "", (), (), [_tail(2)])
        assert verdict.outcome == "pass", verdict.reason
        assert "80 request(s) in 2 window(s) (with 2 in the tail" in verdict.reason

    def test_without_its_tail_the_run_reads_as_lost(self) -> None:
        assert accounting(self.WINDOWS, self.RUNS, "", (), (), [_tail(0)]).outcome == "fail"

    def test_a_request_counted_in_a_window_and_again_in_the_tail_fails(self) -> None:
        verdict = accounting(self.WINDOWS, self.RUNS, "", (), (), [_tail(3)])
        assert verdict.outcome == "fail" and "AIPerf issued 80" in verdict.reason and "81 were seen" in verdict.reason

    def test_an_unbalanced_tail_fails(self) -> None:
        verdict = accounting(self.WINDOWS, self.RUNS, "", (), (), [_tail(2, balanced=False)])
        assert verdict.outcome == "fail" and "soak/w0002's tail" in verdict.reason

    def test_an_unbalanced_tail_of_a_window_the_stop_cut_short_is_unsettled(self) -> None:
        """As for the window itself: AIPerf drops its open requests at SIGINT without a record."""
        verdict = accounting(self.WINDOWS, self.RUNS, "", {RUN}, {"soak/w0002"}, [_tail(2, balanced=False)])
        assert verdict.outcome == "inconclusive" and "soak/w0002's tail" in verdict.reason


class TestTheReport:
    def test_the_tail_shows_under_its_window_where_it_is_not_empty(self) -> None:
        """soak.md: the last window's AIPerf run reads as it ended (told by the tail); a tail that held requests
        gets its own row, an empty one none."""
        closed = SoakWindowClosed(window="soak/w0002", index=2, summary=_window(2, 38))
        full = fold_soak([closed, _tail(2)])
        assert full.windows[0].aiperf_classification == "complete" and full.tails == [_tail(2)]
        text = render_soak_markdown(full)
        assert "| soak/w0002 tail (still open at its close) | 2 | 2 | 0 |" in text
        assert "1 (complete)" in text
        assert "tail (still open" not in render_soak_markdown(fold_soak([closed, _tail(0)]))
