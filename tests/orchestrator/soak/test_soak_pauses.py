"""Host pauses (a suspended VM: the wall clock runs ahead of the monotonic clock) and window_gap: a load gap
inside a pause is the host's, not the load generator's. Seen in a real 1-hour soak on this project's VM: every
process silent for 16 s while the wall clock ran 18.4 s and the monotonic clock 2.05 s between two host samples."""

from __future__ import annotations

import anyio
import pytest

from orchestrator.events import GapDetail, HostSampled, SoakLimits, WindowStats
from orchestrator.soak.evidence import EvidenceCollector
from orchestrator.soak.load_coverage import schedule_allowance, window_gaps
from orchestrator.soak.pauses import HostPause, PauseWatch, paused_within
from orchestrator.spine.bus import Bus

S = 1_000_000_000
T0 = 1_796_362_000 * S  # a wall-clock origin (unix ns)


def _sample(wall_s: float, mono_s: float) -> HostSampled:
    return HostSampled(source="host", ts_ns=T0 + round(wall_s * S), mono_ns=round(mono_s * S), interval_s=2.0,
                       load1=1.0, cpus=2, busy_cpus=1.0, run_cpus=1.0, outside_cpus=0.0, steal_share=0.0)


def _window(index: int, gap_s: float | None, first_s: float) -> WindowStats:
    """Window `index` (60 s each from T0) whose first request came `first_s` into the soak, `gap_s` after the
    previous window's last answer."""
    return WindowStats(window=f"soak/w{index:04d}", index=index, start_unix_ns=T0 + (index - 1) * 60 * S,
                       end_unix_ns=T0 + index * 60 * S, issued=100, gap_before_s=gap_s,
                       first_request_unix_ns=T0 + round(first_s * S), segment=1)


class TestPauseWatch:
    def test_only_the_wall_clock_running_ahead_is_a_pause(self) -> None:
        """Samples 2 s apart on both clocks: none; 18.42 s of wall against 2.05 s monotonic: a 16.37 s pause
        between the two samples; an NTP-sized slew (1 ms): none; the clocks' first pair: nothing to compare."""
        watch = PauseWatch()
        assert watch.observe(T0, 10 * S) is None
        assert watch.observe(T0 + 2 * S, 12 * S) is None
        pause = watch.observe(T0 + round(20.42 * S), round(14.05 * S))
        assert pause == HostPause(start_unix_ns=T0 + 2 * S, end_unix_ns=T0 + round(20.42 * S), paused_s=16.37)
        assert watch.observe(T0 + round(22.421 * S), round(16.05 * S)) is None
        assert watch.pauses == [pause]

    def test_paused_within_counts_overlapping_pauses_capped_at_the_span(self) -> None:
        pauses = [HostPause(start_unix_ns=T0 + 10 * S, end_unix_ns=T0 + 28 * S, paused_s=16.4)]
        assert paused_within(pauses, T0 + 12 * S, T0 + 28 * S) == pytest.approx(16.0)  # capped: the gap is 16 s
        assert paused_within(pauses, T0 + 27 * S, T0 + 29 * S) == pytest.approx(2.0)
        assert paused_within(pauses, T0 + 30 * S, T0 + 40 * S) == 0.0


class TestWindowGapNetOfPauses:
    def test_a_gap_inside_a_host_pause_passes_and_says_so(self) -> None:
        """A 16.06 s cut gap at 100 requests/s inside a 16.37 s pause is not the load's: PASS, the row keeps its
        measured gap and the pause, and the reason names it. Without the pause the same gap FAILs."""
        windows = [_window(1, None, 0.0), _window(2, 0.004, 60.0), _window(3, 16.06, 136.0)]
        allowance = schedule_allowance(100.0, "constant")
        pause = HostPause(start_unix_ns=T0 + round(119.6 * S), end_unix_ns=T0 + 138 * S, paused_s=16.37)
        ok = window_gaps(windows, SoakLimits(), allowance=allowance, pauses=[pause])
        assert ok.outcome == "pass", ok.reason
        assert isinstance(ok.detail, GapDetail)
        row = ok.detail.windows[-1]
        assert (row.gap_s, row.paused_s) == (16.06, 16.06)
        assert "the host's own pause" in ok.reason and "soak/w0003 16.1 of its 16.1 s" in ok.reason
        bad = window_gaps(windows, SoakLimits(), allowance=allowance)
        assert bad.outcome == "fail" and "soak/w0003 16.1 s" in bad.reason

    def test_a_gap_of_the_loads_own_still_fails_beside_a_pause(self) -> None:
        """A pause elsewhere in the soak excuses nothing: a 3 s gap a minute later still FAILs, and a gap only
        partly inside a pause is judged on what lies outside it."""
        pause = HostPause(start_unix_ns=T0 + 100 * S, end_unix_ns=T0 + 104 * S, paused_s=2.0)
        far = [_window(1, None, 0.0), _window(2, 3.0, 63.0)]
        assert window_gaps(far, SoakLimits(), pauses=[pause]).outcome == "fail"
        partly = [_window(1, None, 0.0), _window(2, 4.0, 105.0)]  # 4 s gap, 2 s of it the host's: 2 s > 1 s
        verdict = window_gaps(partly, SoakLimits(), pauses=[pause])
        assert isinstance(verdict.detail, GapDetail)
        assert verdict.outcome == "fail" and verdict.detail.windows[0].paused_s == 2.0


    def test_a_handover_gap_inside_a_host_pause_is_judged_net_of_it(self) -> None:
        """A 1.71 s handover gap overlapping a host sample interval in which the host stood still 1.5 s: 0.21 s is
        the load's: PASS, the row keeping both; the same gap with no pause, or with its end unknown, FAILs."""
        windows = [_window(1, None, 0.0), _window(2, 0.004, 60.0)]
        pause = HostPause(start_unix_ns=T0 + 30 * S, end_unix_ns=T0 + round(33.6 * S), paused_s=1.5)
        handover = ("soak/aiperf01 -> soak/aiperf02", 1.71, T0 + round(32.5 * S))
        ok = window_gaps(windows, SoakLimits(), [handover], pauses=[pause])
        assert ok.outcome == "pass", ok.reason
        assert isinstance(ok.detail, GapDetail)
        row = ok.detail.windows[-1]
        assert (row.window, row.gap_s, row.paused_s) == ("handover soak/aiperf01 -> soak/aiperf02", 1.71, 1.5)
        assert "handover soak/aiperf01 -> soak/aiperf02 1.5 of its 1.71 s" in ok.reason
        assert window_gaps(windows, SoakLimits(), [handover]).outcome == "fail"
        assert window_gaps(windows, SoakLimits(), [(*handover[:2], None)], pauses=[pause]).outcome == "fail"


@pytest.mark.anyio
async def test_the_evidence_finds_pauses_in_the_host_samples_on_the_bus() -> None:
    """The soak's verdict step folds the host samples' two clocks (stamped by the bus) into pauses as they come."""
    bus = Bus("pauses")
    tracker = EvidenceCollector(bus)
    async with anyio.create_task_group() as tg:
        await tg.start(tracker.run)
        for wall_s, mono_s in ((0.0, 100.0), (2.0, 102.0), (20.42, 104.05), (22.42, 106.05)):
            await bus.publish(_sample(wall_s, mono_s))
        with anyio.fail_after(2):
            while tracker.last_seq < 4:
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    assert [p.paused_s for p in tracker.pause_watch.pauses] == [16.37]
