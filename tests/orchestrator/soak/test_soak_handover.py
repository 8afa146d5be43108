"""AIPerf hands over (orchestrator/soak/handover_cue.py, closing.py, load_coverage.py): when, the swap itself with a
fake control, windows waiting for both runs, and the verdicts judging the handover."""

from __future__ import annotations

import math
import random
import time
from pathlib import Path

import anyio
import pytest

from orchestrator.events import AiperfRunFact, ClientRecord, SoakLimits, WindowStats
from orchestrator.soak.closing import wait_closable
from orchestrator.soak.handover_cue import HandoverCue, swap
from orchestrator.soak.load_coverage import accounting, schedule_allowance, window_gaps
from orchestrator.soak.progress import LoadProgress
from orchestrator.soak.sessions import SessionLedger
from orchestrator.spine.bus import Bus
from orchestrator.spine.ports import HaltFact

S = 1_000_000_000
MIB = 1 << 20


class TestHandoverCue:
    def test_memory_above_the_first_minutes_level_is_due_and_another_process_is_ignored(self) -> None:
        cue = HandoverCue(mib=32, every_s=0)
        t0 = 1000 * S
        cue.follow(7, t0)
        for k in range(60):
            cue.observe(7, t0 + k * S, 100 * MIB)
        cue.observe(7, t0 + 61 * S, 120 * MIB)
        assert cue.baseline_bytes == 100 * MIB and cue.due(t0 + 61 * S) == ""
        cue.observe(8, t0 + 62 * S, 500 * MIB)  # another process's sample (the successor's start-up)
        assert cue.due(t0 + 62 * S) == ""
        cue.observe(7, t0 + 63 * S, 133 * MIB)
        assert cue.due(t0 + 63 * S).startswith("memory 33.0 MiB above")
        cue.follow(8, t0 + 70 * S)  # the successor sends: its own baseline, nothing due
        cue.observe(8, t0 + 71 * S, 500 * MIB)
        assert cue.due(t0 + 71 * S) == ""

    def test_every_s_is_due_from_the_first_profiling_request(self) -> None:
        cue = HandoverCue(mib=0, every_s=20)
        assert cue.due(10**20) == ""  # no process followed yet
        cue.follow(1, 50 * S)
        assert cue.due(69 * S) == "" and cue.due(70 * S) == "every 20 s"


class _Control:
    """A fake HandoverControl: records calls; `halted()` gives the fact once `halt()` was called."""

    def __init__(self, sent: int = 0, next_in_s: float | None = None, fact_after_s: float = 0.0) -> None:
        self.folder = Path("/nonexistent")
        self.calls: list[tuple[str, int]] = []
        self._sent = sent
        self._halted = False
        self._halted_at = 0.0
        self._next_in_s = next_in_s  # rate mode: the next slot this long after the halt
        self._fact_after_s = fact_after_s  # the halt fact appears this long after the halt

    def env(self) -> dict[str, str]:
        return {}

    async def wait_ready(self) -> int:
        return time.time_ns()

    def go(self, start_unix_ns: int | None = None) -> None:
        self.calls.append(("go", start_unix_ns or 0))

    def halt(self) -> None:
        self.calls.append(("halt", 0))
        self._halted, self._halted_at = True, time.monotonic()
        self._halt_ns = time.time_ns()

    def set_limit(self, in_flight: int) -> None:
        self.calls.append(("limit", in_flight))

    def halted(self) -> HaltFact | None:
        if not self._halted or time.monotonic() - self._halted_at < self._fact_after_s:
            return None
        slot = None if self._next_in_s is None else self._halt_ns + round(self._next_in_s * 1e9)
        return HaltFact(unix_ns=self._halt_ns, sent=self._sent, next_unix_ns=slot)


@pytest.mark.anyio
class TestSwap:
    async def test_concurrency_the_successor_gains_a_slot_per_finished_predecessor_request(self) -> None:
        """Target 4, the predecessor sent 10 of which 7 were seen: the successor starts at limit 0 before go,
        gets 1 once the halt fact tells 3 are open, then one more per request seen, 4 at the end; never over."""
        pred, succ = _Control(sent=10), _Control()
        ledger = SessionLedger()
        for k in range(7):
            ledger.add(k, k)

        async def finish() -> None:
            for k in range(7, 10):
                await anyio.sleep(0.05)
                ledger.add(k, k)

        async with anyio.create_task_group() as tg:
            tg.start_soon(finish)
            done = await swap(pred, succ, ledger, concurrency=4)
        assert pred.calls == [("halt", 0)]
        assert succ.calls == [("limit", 0), ("go", 0), ("limit", 1), ("limit", 2), ("limit", 3), ("limit", 4)]
        assert done.sent == ledger.final == 10 and done.over_target == 0 and done.halt_ns <= done.go_ns

    async def test_rate_mode_lets_go_at_the_predecessors_next_slot_with_no_limit(self) -> None:
        """Rate mode: the successor's `go` carries the predecessor's next slot from its halt fact, so the
        schedule runs on across the handover; no limit is set."""
        pred, succ = _Control(sent=5, next_in_s=0.4, fact_after_s=0.02), _Control()
        done = await swap(pred, succ, SessionLedger(), concurrency=None)
        fact = pred.halted()
        assert fact is not None and fact.next_unix_ns is not None
        assert succ.calls == [("go", fact.next_unix_ns)] and done.due_ns == fact.next_unix_ns
        assert done.sent == 5 and done.over_target is None and done.halt_ns < done.go_ns

    async def test_rate_mode_without_a_slot_lets_go_at_once(self) -> None:
        """A predecessor that halted before its schedule began (no next slot): `go` with no start."""
        pred, succ = _Control(sent=0), _Control()
        done = await swap(pred, succ, SessionLedger(), concurrency=None)
        assert succ.calls == [("go", 0)] and done.due_ns is None and done.sent == 0


def _record(run: str, session: int, issued_ns: int) -> ClientRecord:
    return ClientRecord(request_id=f"{run}-{session}", aiperf_run=run, phase="profiling", session_num=session,
                        credit_issued_ns=issued_ns, request_start_ns=issued_ns + 1000, request_end_ns=issued_ns + 2000)


@pytest.mark.anyio
async def test_a_window_open_across_a_handover_waits_for_the_successors_requests() -> None:
    """The predecessor halted with all it sent seen covers the window's end, but the successor joined the runs
    while the window was open: the window closes only once the successor's credits pass its end."""
    bus = Bus("handover")
    tracker = LoadProgress(bus)
    names = ["soak/aiperf01"]
    end = time.time_ns() + S // 2
    closed: list[bool] = []
    async with anyio.create_task_group() as tg:
        await tg.start(tracker.run)

        async def close() -> None:
            closed.append(await wait_closable(tracker, names, end, done=anyio.Event(), wait_s=5.0))

        tg.start_soon(close)
        await bus.publish(_record("soak/aiperf01", 0, end - S))
        await anyio.sleep(0.05)  # the window is waiting before the successor joins
        names.append("soak/aiperf02")
        tracker.ledger("soak/aiperf01").final = 1
        await bus.publish(_record("soak/aiperf01", 0, end - S))  # seen again: the tracker looks again
        await anyio.sleep(0.2)
        assert not closed
        await bus.publish(_record("soak/aiperf02", 0, end + S // 100))
        with anyio.fail_after(2):
            while not closed:
                await anyio.sleep(0.01)
        assert closed == [True]
        tg.cancel_scope.cancel()


def _window(index: int, issued: int, gap: float | None = 0.0) -> WindowStats:
    return WindowStats(window=f"soak/w{index:04d}", index=index, start_unix_ns=index * 10 * S,
                       end_unix_ns=(index + 1) * 10 * S, issued=issued, gap_before_s=gap, segment=1)


class TestVerdicts:
    def test_window_gap_judges_each_handover_gap(self) -> None:
        windows = [_window(1, 5, None), _window(2, 5)]
        ok = window_gaps(windows, SoakLimits(), [("soak/aiperf01 -> soak/aiperf02", 0.05, None)])
        assert ok.outcome == "pass" and "handover soak/aiperf01 -> soak/aiperf02" in \
            [r.window for r in ok.detail.windows]  # type: ignore[union-attr]
        bad = window_gaps(windows, SoakLimits(), [("soak/aiperf01 -> soak/aiperf02", 1.5, None)])
        assert bad.outcome == "fail" and "handover soak/aiperf01 -> soak/aiperf02 1.5 s" in bad.reason

    def test_open_loop_gaps_are_judged_beyond_the_schedules_own_idle_time(self) -> None:
        """At 1 request/s with constant arrivals a cut is idle for up to 1 s by design (the 2-hour soak at
        --rate 1 once FAILed on a 1.04 s cut): judged beyond 1/rate, that cut passes and a 2.5 s one (1.5 s the
        tool's) fails. Poisson arrivals are allowed what they exceed at one of the soak's cuts in 1 % of soaks
        (5.70 s at 1/s over 3 cuts); closed loop is allowed nothing. Each row keeps its measured gap; total and fraction count the excess."""
        windows = [_window(1, 5, None), _window(2, 5, 1.04), _window(3, 5, 0.98)]
        constant = schedule_allowance(1.0, "constant")
        ok = window_gaps(windows, SoakLimits(), allowance=constant)
        assert ok.outcome == "pass", ok.reason
        assert "(0.04 s beyond the schedule's own 1 s between requests (constant arrivals at 1/s))" in ok.reason
        assert ok.detail.allowance_s == 1.0 and ok.detail.total_s == pytest.approx(0.04)  # type: ignore[union-attr]
        assert [r.gap_s for r in ok.detail.windows] == [1.04, 0.98]  # type: ignore[union-attr]
        late = window_gaps([*windows, _window(4, 5, 2.5)], SoakLimits(), allowance=constant)
        assert late.outcome == "fail" and "soak/w0004 2.5 s" in late.reason
        poisson = schedule_allowance(1.0, "poisson")
        assert poisson.seconds(3) == pytest.approx(-math.log(0.01 / 3), abs=1e-9)  # 5.70 s
        assert window_gaps([*windows, _window(4, 5, 6.0)], SoakLimits(), allowance=poisson).outcome == "pass"
        assert schedule_allowance(None, "constant").seconds(3) == 0.0
        closed = window_gaps(windows, SoakLimits(), allowance=schedule_allowance(None, "constant"))
        assert closed.outcome == "fail" and "soak/w0002 1.04 s" in closed.reason
        handover = window_gaps(windows, SoakLimits(max_gap_fraction=0.05), [("soak/aiperf01 -> soak/aiperf02", 1.9, None)],
                               constant)
        assert handover.outcome == "pass", handover.reason  # 0.9 s beyond the schedule's second

    @pytest.mark.parametrize("rate", [0.5, 2.0, 10.0])
    def test_poisson_idle_at_the_cuts_fails_at_most_one_soak_in_a_hundred(self, rate: float) -> None:
        """Seeded: 2,000 soaks of 96 cuts (8 h of 5-minute windows), each cut idle for the exponential time
        Poisson arrivals leave (memoryless: the wait for the next arrival after the last answer), plus the
        request time-outs' jitter of a busy host (up to 0.3 s): at most 1 % fail window_gap (bound 1 %). The
        same soaks with one cut held 2.5 s by the tool: at 10/s (allowance 0.92 s) every one fails; at 0.5/s
        the schedule's own idle time hides it (what a Poisson rate that low cannot detect)."""
        rng = random.Random(int(rate * 1000))
        allowance = schedule_allowance(rate, "poisson")

        def fails(extra: float) -> bool:
            gaps = [rng.expovariate(rate) + rng.uniform(0.0, 0.3) for _ in range(96)]
            gaps[rng.randrange(96)] += extra
            windows = [_window(1, 5, None)] + [_window(i, 5, g) for i, g in enumerate(gaps, start=2)]
            return window_gaps(windows, SoakLimits(), allowance=allowance).outcome == "fail"

        false_fails = sum(fails(0.0) for _ in range(2000)) / 2000
        assert false_fails <= 0.01, false_fails
        caught = sum(fails(2.5) for _ in range(500)) / 500
        assert caught == 1.0 if rate == 10.0 else caught < 0.2, caught

    def test_accounting_sums_what_the_runs_of_a_segment_issued(self) -> None:
        windows = [_window(1, 6, None), _window(2, 4)]
        runs = [AiperfRunFact(segment=1, name="soak/aiperf01", issued={"profiling": 7}, issued_from={}),
                AiperfRunFact(segment=1, name="soak/aiperf02", issued={"profiling": 3}, issued_from={})]
        assert accounting(windows, runs, "", (), ()).outcome == "pass"
        short = [runs[0], AiperfRunFact(segment=1, name="soak/aiperf02", issued={"profiling": 4}, issued_from={})]
        lost = accounting(windows, short, "", (), ())
        assert lost.outcome == "fail" and "soak/aiperf01 + soak/aiperf02 profiling: AIPerf issued 11" in lost.reason
