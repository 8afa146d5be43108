"""Soak verdict math on synthetic window series: flat, leaking, noisy, spiky, too short."""

from __future__ import annotations

import random

import msgspec
import pytest

from orchestrator.config import CorrectnessCriteria
from orchestrator.judge.gates import ScoredAnswer
from orchestrator.judge.stats import Summary
from orchestrator.soak.verdicts import (
    ProcessCheck,
    ServerExitFact,
    SoakLimits,
    fit_trend,
    judge_soak,
)
from orchestrator.soak.window import MemorySummary, WindowAccumulator, WindowStats

MIB = 2**20
WINDOW_NS = 300 * 10**9  # five-minute windows
T0 = 1_700_000_000 * 10**9


def _windows(rss_mib: list[float], p99_ms: list[float] | None = None, *, errors: list[int] | None = None,
             issued: int = 1000) -> list[WindowStats]:
    out = []
    for i, rss in enumerate(rss_mib):
        p99 = (p99_ms or [100.0] * len(rss_mib))[i]
        err = (errors or [0] * len(rss_mib))[i]
        out.append(WindowStats(
            window=f"soak/w{i + 1:04d}", index=i + 1, start_unix_ns=T0 + i * WINDOW_NS,
            end_unix_ns=T0 + (i + 1) * WINDOW_NS, issued=issued, ok=issued - err, errors=err,
            by_cause={"http_5xx": err} if err else {}, error_rate=err / issued if issued else None,
            server_latency_ms=Summary(count=issued, p50=50.0, p99=p99),
            rss=MemorySummary(samples=300, median_bytes=rss * MIB, start_bytes=int(rss * MIB),
                              end_bytes=int(rss * MIB), peak_bytes=int(rss * MIB)),
            correct=10, scored=10, correctness_passed=True))
    return out


def _verdict(verdicts, metric):
    return next(v for v in verdicts if v.metric == metric)


LIMITS = SoakLimits(rss_limit_mib_per_h=8.0, p99_latency_limit_pct_per_h=10.0, max_error_rate=0.001,
                    warmup_windows=1)


class TestFitTrend:
    def test_linear_series_slope_and_growth_agree(self) -> None:
        """On a straight line both the least-squares slope and the median growth equal the line's slope."""
        t = [i / 12 for i in range(24)]
        trend = fit_trend(t, [100 + 6 * x for x in t])
        assert trend.slope_per_h == pytest.approx(6.0)
        assert trend.growth_per_h == pytest.approx(6.0)
        assert trend.k == 8

    def test_rejects_single_point(self) -> None:
        """One point has no slope: the caller must not ask."""
        with pytest.raises(ValueError, match="two or more"):
            fit_trend([0.0], [1.0])


class TestMemoryVerdict:
    def test_flat_memory_passes(self) -> None:
        """A flat 500 MiB series passes with zero slope and growth."""
        v = _verdict(judge_soak(_windows([500.0] * 12), LIMITS), "server_rss")
        assert v.passed and v.judged
        assert v.detail["slope"] == pytest.approx(0.0)
        assert v.detail["growth"] == pytest.approx(0.0)

    def test_leak_fails_with_slope_shown(self) -> None:
        """+2 MiB per five-minute window is +24 MiB/h: both measures exceed 8 MiB/h, the verdict shows them."""
        v = _verdict(judge_soak(_windows([500.0 + 2 * i for i in range(12)]), LIMITS), "server_rss")
        assert not v.passed and v.judged
        assert v.detail["slope"] == pytest.approx(24.0)
        assert v.detail["growth"] == pytest.approx(24.0)
        assert "slope +24 MiB/h" in v.reason

    def test_warmup_growth_is_discarded(self) -> None:
        """A big jump in the warmup window only (then flat) does not fail the memory verdict."""
        v = _verdict(judge_soak(_windows([100.0] + [600.0] * 11), LIMITS), "server_rss")
        assert v.passed
        assert v.detail["warmup_windows_discarded"] == 1
        assert v.detail["windows"][0] == "soak/w0002"

    def test_noisy_but_flat_passes(self) -> None:
        """Noise of +-20 MiB around a flat line keeps the slope and median growth under the limit."""
        rng = random.Random(7)
        series = [500.0 + rng.uniform(-20, 20) for _ in range(48)]
        v = _verdict(judge_soak(_windows(series), LIMITS), "server_rss")
        assert v.passed, v.reason
        assert abs(v.detail["slope"]) < 8.0

    def test_single_spike_passes(self) -> None:
        """One 300 MiB spike near the end lifts the slope past the limit but not the medians: passes, and says
        that only one measure exceeds."""
        series = [500.0] * 12
        series[-2] = 800.0
        v = _verdict(judge_soak(_windows(series), LIMITS), "server_rss")
        assert v.detail["slope"] > 8.0
        assert v.detail["growth"] == pytest.approx(0.0)
        assert v.passed
        assert "only one exceeds" in v.reason

    def test_too_few_windows_is_not_judged(self) -> None:
        """One window after warmup cannot show a trend: passed but judged false, with the reason."""
        v = _verdict(judge_soak(_windows([500.0, 900.0]), LIMITS), "server_rss")
        assert v.passed and not v.judged
        assert "needs 2" in v.reason


class TestLatencyVerdict:
    def test_relative_drift_fails(self) -> None:
        """p99 growing 5 % of its start per five-minute window is 60 %/h: fails the 10 %/h limit."""
        p99 = [100.0 * (1 + 0.05 * i) for i in range(12)]
        v = _verdict(judge_soak(_windows([500.0] * 12, p99), LIMITS), "server_p99_latency")
        assert not v.passed
        assert v.detail["slope"] == pytest.approx(60.0 / 1.05, rel=0.05)

    def test_flat_latency_passes(self) -> None:
        """A flat p99 passes."""
        v = _verdict(judge_soak(_windows([500.0] * 6, [120.0] * 6), LIMITS), "server_p99_latency")
        assert v.passed and v.judged
        assert "server's handler_ms" in v.detail["source"]


class TestOtherVerdicts:
    def test_error_rate_above_limit_fails_with_causes(self) -> None:
        """Two errors in 4000 profiling requests (0.05 %) pass; ten (0.25 %) fail and list the cause."""
        ok = _verdict(judge_soak(_windows([500.0] * 5, errors=[50, 1, 0, 1, 0]), LIMITS), "error_rate")
        assert ok.passed and ok.detail["errors"] == 2  # the warmup window's 50 are discarded
        assert "2/4000 = 0.0500% (limit 0.1000%) over 4 window(s) after 1 warmup window(s)" in ok.reason
        bad = _verdict(judge_soak(_windows([500.0] * 5, errors=[0, 4, 3, 3, 0]), LIMITS), "error_rate")
        assert not bad.passed
        assert "http_5xx: 10" in bad.reason

    def test_correctness_below_gate_in_one_window_fails(self) -> None:
        """A window whose scored answers fall below the model's gate fails the correctness verdict."""
        criteria = CorrectnessCriteria(min_pass_rate=0.9, arm="audio")
        acc = WindowAccumulator(3, T0, criteria=criteria)
        for i in range(10):
            acc.add_verdict(ScoredAnswer(item_id=f"i{i}", arm="audio", kind="count",
                                         verdict="correct" if i < 8 else "wrong"))
        bad = acc.close(T0 + WINDOW_NS)
        assert bad.correctness_passed is False
        v = _verdict(judge_soak([*_windows([500.0] * 2), bad], LIMITS), "correctness")
        assert not v.passed
        assert "soak/w0003 arm:audio 8/10 < 0.9" in v.reason

    def test_restart_fails_and_names_it(self) -> None:
        """Any unexpected exit fails the restart verdict with its code and signal."""
        v = _verdict(judge_soak(_windows([500.0] * 3), LIMITS, exits=[
            ServerExitFact(incarnation=1, returncode=-9, signal="SIGKILL", restarted=True)]), "restarts")
        assert not v.passed
        assert "incarnation 1 exited (code -9, SIGKILL), restarted" in v.reason

    def test_process_check_only_at_the_end(self) -> None:
        """Checkpoints have no process verdict; at the end a leftover process fails it."""
        assert all(v.metric != "processes" for v in judge_soak(_windows([1.0] * 3), LIMITS))
        v = _verdict(judge_soak(_windows([1.0] * 3), LIMITS, processes=ProcessCheck(leftover=["123 aiperf"])),
                     "processes")
        assert not v.passed and "123 aiperf" in v.reason

    def test_windows_without_requests_fail_the_error_rate(self) -> None:
        """Windows that recorded no profiling request at all (AIPerf never reached the server) fail."""
        v = _verdict(judge_soak(_windows([500.0] * 3, issued=0), LIMITS), "error_rate")
        assert not v.passed and v.judged
        assert "no profiling request was recorded in 2 window(s)" in v.reason


class TestCutShortWindows:
    def test_a_window_the_stop_cut_before_its_first_request_is_reported_not_judged(self) -> None:
        """SIGINT ended window 3 before its first request: the error rate judges windows 2 only and
        names window 3 as cut short, instead of failing on "no profiling request was recorded"."""
        windows = _windows([500.0] * 2) + [msgspec.structs.replace(_windows([500.0] * 3, issued=0)[2],
                                                                   aiperf_classification="cancelled")]
        v = _verdict(judge_soak(windows, LIMITS, cut_short={"soak/w0003"}), "error_rate")
        assert v.passed and v.judged and v.detail["cut_short"] == ["soak/w0003"]
        assert v.reason.endswith("; cut short by the stop, not judged: soak/w0003")
        assert v.detail["issued"] == 1000

    def test_only_cut_windows_after_warmup_is_not_judged(self) -> None:
        windows = _windows([500.0]) + _windows([500.0] * 2, issued=0)[1:]
        v = _verdict(judge_soak(windows, LIMITS, cut_short={"soak/w0002"}), "error_rate")
        assert v.passed and not v.judged and "cut short by the stop, not judged: soak/w0002" in v.reason


def _timed(gaps: list[float | None], *, startup_s: float = 10.0, exit_s: float = 1.0) -> list[WindowStats]:
    """Windows whose AIPerf timeline has the given start-up and exit, and the given gap before each."""
    out = []
    for i, gap in enumerate(gaps):
        launch = T0 + i * WINDOW_NS
        first = launch + int(startup_s * 1e9)
        last = launch + WINDOW_NS - int(2 * exit_s * 1e9)
        out.append(WindowStats(window=f"soak/w{i + 1:04d}", index=i + 1, start_unix_ns=launch,
                               end_unix_ns=launch + WINDOW_NS, gap_before_s=gap, aiperf_launch_unix_ns=launch,
                               first_request_unix_ns=first, last_request_unix_ns=last,
                               aiperf_exit_unix_ns=last + int(exit_s * 1e9)))
    return out


class TestWindowGapVerdict:
    def test_gaps_within_aiperf_exit_and_startup_pass_with_the_numbers(self) -> None:
        """Gaps of AIPerf's exit + start-up + 0.5 s pass; the detail lists each window's gap and start-up."""
        v = _verdict(judge_soak(_timed([None, 11.5, 11.2]), LIMITS), "window_gap")
        assert v.passed and v.judged
        assert [r["window"] for r in v.detail["windows"]] == ["soak/w0002", "soak/w0003"]
        assert v.detail["windows"][0] == {"window": "soak/w0002", "gap_s": 11.5, "startup_s": 10.0,
                                          "previous_exit_s": 1.0, "allowed_s": 13.0, "launch_after_exit_s": 1.0}
        assert v.reason.startswith("largest gap 11.5 s before soak/w0002 = previous AIPerf exit 1.0 s + "
                                   "start-up 10.0 s + 0.5 s of the soak's own")

    def test_a_gap_past_startup_exit_and_slack_fails_naming_the_window(self) -> None:
        """A 25 s gap where AIPerf needs 11 s (the old finalise-then-launch loop) fails the verdict."""
        v = _verdict(judge_soak(_timed([None, 11.0, 25.0]), LIMITS), "window_gap")
        assert not v.passed
        assert "windows not consecutive (soak/w0003 25.0 s > 13.0 s)" in v.reason

    def test_no_timeline_is_not_judged(self) -> None:
        """Windows without AIPerf launch or exit times (an old journal) leave the verdict unjudged."""
        v = _verdict(judge_soak(_windows([500.0] * 3), LIMITS), "window_gap")
        assert v.passed and not v.judged


class TestWindowAccumulatorTimeline:
    def test_first_and_last_request_span_every_phase(self) -> None:
        """Start-up ends at the first request of any phase (warmup included); exit starts at the last answer."""
        acc = WindowAccumulator(1, T0, criteria=CorrectnessCriteria(min_pass_rate=0.5))
        acc.add_request(phase="warmup", ok=True, cause="ok", request_latency_ms=5.0, handler_ms=None,
                        model_call_ms=None, request_start_ns=T0 + 8 * 10**9, request_end_ns=T0 + 9 * 10**9)
        acc.add_request(phase="profiling", ok=True, cause="ok", request_latency_ms=5.0, handler_ms=None,
                        model_call_ms=None, request_start_ns=T0 + 9 * 10**9, request_end_ns=T0 + 20 * 10**9)
        stats = acc.close(T0 + 30 * 10**9, aiperf_launch_unix_ns=T0, aiperf_exit_unix_ns=T0 + 21 * 10**9)
        assert stats.startup_s == pytest.approx(8.0) and stats.exit_s == pytest.approx(1.0)
        assert WindowStats.from_summary(stats.to_summary()).first_request_unix_ns == T0 + 8 * 10**9
