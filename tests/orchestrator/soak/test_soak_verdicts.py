"""Soak verdicts on synthetic window series: three outcomes, the evidence each needs, and the numbers."""

from __future__ import annotations

import random

import msgspec
import numpy as np
import pytest

from orchestrator.config import CorrectnessCriteria
from orchestrator.events import RunAccount, SampledMemoryDetail, SoakVerdict, SoakWindowClosed, WindowGap
from orchestrator.judge.gates import ScoredAnswer
from orchestrator.judge.stats import Summary
from orchestrator.soak import exit_code
from orchestrator.soak.samples import SampleSeries
from orchestrator.soak.verdicts import (
    AiperfRunFact,
    MetricVerdict,
    ProcessCheck,
    ServerExitFact,
    SoakEvidence,
    SoakLimits,
    fit_trend,
    judge_soak,
)
from orchestrator.soak.window import MemorySummary, WindowAccumulator, WindowStats
from orchestrator.spine.journal import decode_event, encode_event

MIB = 2**20
WINDOW_NS = 300 * 10**9  # five-minute windows
T0 = 1_700_000_000 * 10**9
ITEMS = [f"item-{k:02d}" for k in range(20)]


def _mem(mib: float) -> MemorySummary:
    return MemorySummary(samples=300, median_bytes=mib * MIB, start_bytes=int(mib * MIB), end_bytes=int(mib * MIB),
                         peak_bytes=int(mib * MIB))


def _windows(rss_mib: list[float], p99_ms: list[float] | None = None, *, errors: list[int] | None = None,
             issued: int = 1000, own_mib: list[float] | None = None, item_scale: list[float] | None = None,
             seed: int = 0) -> list[WindowStats]:
    """Windows with the given server RSS, p99, errors, aqbench RSS; items are a two-mode mix (50 ms signal
    items, 1-3 s speech items) scaled per window by `item_scale`, with a little noise."""
    rng = random.Random(seed)
    out = []
    for i, rss in enumerate(rss_mib):
        p99 = (p99_ms or [100.0] * len(rss_mib))[i]
        err = (errors or [0] * len(rss_mib))[i]
        scale = (item_scale or [1.0] * len(rss_mib))[i]
        items = {it: scale * (50.0 if k % 2 else 1000.0 + 100 * k) * rng.uniform(0.97, 1.03)
                 for k, it in enumerate(ITEMS)}
        out.append(WindowStats(
            window=f"soak/w{i + 1:04d}", index=i + 1, start_unix_ns=T0 + i * WINDOW_NS,
            end_unix_ns=T0 + (i + 1) * WINDOW_NS, issued=issued, ok=issued - err, errors=err,
            by_cause={"http_5xx": err} if err else {}, error_rate=err / issued if issued else None,
            server_latency_ms=Summary(count=issued, p50=50.0, p99=p99), rss=_mem(rss),
            orchestrator_rss=_mem(own_mib[i]) if own_mib else MemorySummary(),
            item_server_ms=items, correct=10, scored=10, correctness_passed=True))
    return out


def _verdict(verdicts: list[MetricVerdict], metric: str) -> MetricVerdict:
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
    def test_flat_noisy_memory_passes_with_the_interval(self) -> None:
        """12 windows of flat RSS with realistic noise pass: the slope interval lies below the limit."""
        rng = random.Random(7)
        v = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0 + rng.gauss(0, 0.5) for _ in range(12)])), LIMITS), "server_rss")
        assert v.outcome == "pass", v.reason
        assert v.detail.interval[1] < 8.0 and v.detail.n == 11 and v.detail.unit == "MiB/h"
        assert "Theil-Sen" in v.detail.method

    def test_leak_three_times_the_limit_fails(self) -> None:
        """RSS growing 24 MiB/h (3x the limit) over 12 five-minute windows fails, the slope shown."""
        v = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0 + 2.0 * i for i in range(12)])), LIMITS), "server_rss")
        assert v.outcome == "fail", v.reason
        assert v.detail.slope == pytest.approx(24.0, rel=0.01)
        assert "drifts" in v.reason

    def test_two_windows_are_inconclusive_never_fail(self) -> None:
        """Two judged windows, however steep, are inconclusive and say how many windows are missing."""
        v = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0, 600.0, 900.0])), LIMITS), "server_rss")
        assert v.outcome == "inconclusive"
        assert "2 of 6 windows" in v.reason

    def test_growth_past_the_cap_fails_a_leak_that_levels_off(self) -> None:
        """A 100 MiB step that then stays flat fails on the growth cap even where the slope cannot decide."""
        series = [500.0] * 5 + [600.0] * 7
        v = _verdict(judge_soak(SoakEvidence(windows=_windows(series)), LIMITS), "server_rss")
        assert v.outcome == "fail" and v.detail.growth_mib == pytest.approx(100.0)
        assert "exceeds the cap" in v.reason

    def test_no_sample_is_inconclusive(self) -> None:
        """Windows without memory samples leave the verdict inconclusive, naming the reason."""
        windows = [WindowStats(window=f"soak/w{i:04d}", index=i, start_unix_ns=T0 + i * WINDOW_NS,
                               end_unix_ns=T0 + (i + 1) * WINDOW_NS) for i in range(1, 4)]
        v = _verdict(judge_soak(SoakEvidence(windows=windows), LIMITS), "server_rss")
        assert v.outcome == "inconclusive" and v.reason.startswith("no sample in the 2 window(s)")

    def test_the_configured_evidence_is_the_rule_s(self) -> None:
        """min_trend_windows from [soak] reaches the rule: 4 judged windows are too few by default, and
        enough (here failing on the growth cap) when 4 are configured."""
        series = [500.0 + 100.0 * i for i in range(4)]
        default = _verdict(judge_soak(SoakEvidence(windows=_windows(series)), SoakLimits(warmup_windows=0)), "server_rss")
        assert default.outcome == "inconclusive" and "4 of 6 windows" in default.reason
        four = _verdict(judge_soak(SoakEvidence(windows=_windows(series)), SoakLimits(warmup_windows=0, min_trend_windows=4)), "server_rss")
        assert four.outcome == "fail" and "exceeds the cap" in four.reason


class TestOrchestratorMemory:
    def test_aqbench_growth_is_judged_by_the_same_rule(self) -> None:
        """aqbench's own RSS is put to the memory rule: flat passes, a steady climb fails."""
        flat = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0] * 12, own_mib=[120.0 + 0.01 * (i % 2) for i in range(12)])), LIMITS), "orchestrator_rss")
        assert flat.outcome == "pass", flat.reason
        grows = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0] * 12, own_mib=[120.0 + 3.0 * i for i in range(12)])), LIMITS),
                         "orchestrator_rss")
        assert grows.outcome == "fail" and "aqbench's own process" in grows.detail.source


class TestLatencyVerdicts:
    def test_same_item_drift_ignores_the_workload_mix(self) -> None:
        """Fast and slow items around their own baselines: flat over 12 windows passes."""
        v = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0] * 12)), LIMITS), "latency_drift")
        assert v.outcome == "pass", v.reason
        assert v.detail.baseline_items == len(ITEMS) and "server handler_ms" in v.detail.source

    def test_every_item_slowing_fails(self) -> None:
        """Every item 6 % slower per five-minute window (72 %/h) fails the 10 %/h limit."""
        v = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0] * 12, item_scale=[1.0 + 0.06 * i for i in range(12)])), LIMITS),
                     "latency_drift")
        assert v.outcome == "fail", v.reason

    def test_p99_needs_enough_samples_per_window(self) -> None:
        """A p99 from windows of 500 requests is inconclusive (1,000 needed); with 1,000 it is judged."""
        few = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0] * 12, issued=500)), LIMITS), "server_p99_latency")
        assert few.outcome == "inconclusive" and "fewer than 1000" in few.reason
        enough = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0] * 12, [120.0] * 12)), LIMITS), "server_p99_latency")
        assert enough.outcome == "pass", enough.reason


class TestOtherVerdicts:
    def test_error_rate_above_limit_fails_with_causes(self) -> None:
        """Two errors in 4000 profiling requests (0.05 %) pass; ten (0.25 %) fail and list the cause."""
        ok = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0] * 5, errors=[50, 1, 0, 1, 0])), LIMITS), "error_rate")
        assert ok.outcome == "pass" and ok.detail.errors == 2  # the warmup window's 50 are discarded
        assert "2/4000 = 0.05% (limit 0.1%) over 4 window(s) after 1 warmup window(s)" in ok.reason
        bad = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0] * 5, errors=[0, 4, 3, 3, 0])), LIMITS), "error_rate")
        assert bad.outcome == "fail"
        assert "http_5xx: 10" in bad.reason

    @staticmethod
    def _scored_window(index: int, correct: int, total: int) -> WindowStats:
        acc = WindowAccumulator(index, T0, criteria=CorrectnessCriteria(min_pass_rate=0.9, arm="audio"))
        for i in range(total):
            acc.add_verdict(ScoredAnswer(item_id=f"i{i}", arm="audio", kind="count",
                                         verdict="correct" if i < correct else "wrong"))
        return acc.close(T0 + WINDOW_NS)

    def test_correctness_below_gate_beyond_chance_fails(self) -> None:
        """A window whose answers fall below the gate by more than chance allows fails the verdict."""
        bad = self._scored_window(3, 2, 10)
        assert bad.correctness_passed is False
        v = _verdict(judge_soak(SoakEvidence(windows=[*_windows([500.0] * 2), bad]), LIMITS), "correctness")
        assert v.outcome == "fail"
        assert "beyond chance in 1 window(s): soak/w0003 arm:audio 2/10 < 0.9" in v.reason

    def test_a_shortfall_within_chance_is_inconclusive(self) -> None:
        """8/10 under a 90 % gate can be a 94 %-correct model's bad luck: inconclusive, named, never fail."""
        v = _verdict(judge_soak(SoakEvidence(windows=[*_windows([500.0] * 2), self._scored_window(3, 8, 10)]), LIMITS), "correctness")
        assert v.outcome == "inconclusive"
        assert "soak/w0003 arm:audio 8/10 < 0.9 (within chance)" in v.reason

    def test_a_model_above_its_gate_rarely_fails_on_small_windows(self) -> None:
        """1,000 seeded soaks of a 94.5 %-correct model (the reference's audio arm), 12 windows of 13 scored
        answers under a 90 % gate: at most 1 % fail (the old per-window rule failed most of them)."""
        rng = np.random.default_rng(7)
        fails = old_rule_fails = 0
        for _ in range(1000):
            counts = rng.binomial(13, 0.945, size=12)
            windows = [self._scored_window(i + 1, int(c), 13) for i, c in enumerate(counts)]
            fails += _verdict(judge_soak(SoakEvidence(windows=windows), LIMITS), "correctness").outcome == "fail"
            old_rule_fails += any(c / 13 < 0.9 for c in counts)
        assert fails <= 10, fails
        assert old_rule_fails > 500, old_rule_fails

    def test_restart_fails_and_names_it(self) -> None:
        """Any unexpected exit fails the restart verdict with its code and signal."""
        v = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0] * 3), exits=[
            ServerExitFact(incarnation=1, returncode=-9, signal="SIGKILL", restarted=True)]), LIMITS), "restarts")
        assert v.outcome == "fail"
        assert "incarnation 1 exited (code -9, SIGKILL), restarted" in v.reason

    def test_process_check_only_at_the_end(self) -> None:
        """Checkpoints have no process verdict; at the end a leftover process fails it."""
        assert all(v.metric != "processes" for v in judge_soak(SoakEvidence(windows=_windows([1.0] * 3)), LIMITS))
        v = _verdict(judge_soak(SoakEvidence(windows=_windows([1.0] * 3)), LIMITS, processes=ProcessCheck(leftover=["123 aiperf"])),
                     "processes")
        assert v.outcome == "fail" and "123 aiperf" in v.reason

    def test_windows_without_requests_fail_the_error_rate(self) -> None:
        """Windows that recorded no profiling request at all (AIPerf never reached the server) fail."""
        v = _verdict(judge_soak(SoakEvidence(windows=_windows([500.0] * 3, issued=0)), LIMITS), "error_rate")
        assert v.outcome == "fail"
        assert "no profiling request was recorded in 2 window(s)" in v.reason


class TestCutShortWindows:
    def test_a_window_the_stop_cut_before_its_first_request_is_reported_not_judged(self) -> None:
        """SIGINT ended window 3 before its first request: the error rate judges windows 2 only and
        names window 3 as cut short, instead of failing on "no profiling request was recorded"."""
        windows = _windows([500.0] * 2) + [msgspec.structs.replace(_windows([500.0] * 3, issued=0)[2],
                                                                   aiperf_classification="cancelled")]
        v = _verdict(judge_soak(SoakEvidence(windows=windows, cut_short={"soak/w0003"}), LIMITS), "error_rate")
        assert v.outcome == "pass" and v.detail.cut_short == ["soak/w0003"]
        assert v.reason.endswith("; cut short by the stop, not judged: soak/w0003")
        assert v.detail.issued == 1000

    def test_only_cut_windows_after_warmup_is_not_judged(self) -> None:
        windows = _windows([500.0]) + _windows([500.0] * 2, issued=0)[1:]
        v = _verdict(judge_soak(SoakEvidence(windows=windows, cut_short={"soak/w0002"}), LIMITS), "error_rate")
        assert v.outcome == "inconclusive" and "cut short by the stop, not judged: soak/w0002" in v.reason


def _gapped(gaps: list[float | None]) -> list[WindowStats]:
    return [WindowStats(window=f"soak/w{i + 1:04d}", index=i + 1, start_unix_ns=T0 + i * WINDOW_NS,
                        end_unix_ns=T0 + (i + 1) * WINDOW_NS, gap_before_s=gap, segment=1)
            for i, gap in enumerate(gaps)]


def _accounted(issued: list[int], *, segments: list[int] | None = None, warmup: int = 0,
               balanced: list[bool | None] | None = None) -> list[WindowStats]:
    """Windows with `issued` profiling requests each (the first also `warmup` warmup ones)."""
    return [WindowStats(window=f"soak/w{i + 1:04d}", index=i + 1, start_unix_ns=T0 + i * WINDOW_NS,
                        end_unix_ns=T0 + (i + 1) * WINDOW_NS, issued=n, ok=n, warmup_issued=warmup if i == 0 else 0,
                        segment=(segments or [1] * len(issued))[i],
                        accounting_balanced=(balanced or [True] * len(issued))[i])
            for i, n in enumerate(issued)]


def _run(segment: int, issued: dict[str, int], source: str = "aiperf_log") -> AiperfRunFact:
    return AiperfRunFact(segment=segment, name=f"soak/aiperf{segment:02d}", issued=issued,
                         issued_from=dict.fromkeys(issued, source))


class TestAccountingVerdict:
    def test_runs_that_issued_what_their_windows_saw_pass(self) -> None:
        """Two AIPerf runs (one restarted), each issuing exactly what its windows saw, warmup apart."""
        windows = _accounted([100, 100, 40, 100], segments=[1, 1, 2, 2], warmup=2)
        v = _verdict(judge_soak(SoakEvidence(windows=windows, runs=[_run(1, {"warmup": 2, "profiling": 200}),
                                                       _run(2, {"profiling": 140})]), LIMITS), "accounting")
        assert v.outcome == "pass", v.reason
        assert v.reason == "342 request(s) in 4 window(s) balanced; 2 ended AIPerf run(s) issued exactly what was seen"
        assert v.detail.runs[1] == RunAccount(run="soak/aiperf02", segment=2, issued={"profiling": 140},
                                              issued_from={"profiling": "aiperf_log"},
                                              seen={"profiling": 140, "warmup": 0})

    def test_requests_an_aiperf_run_sent_and_lost_fail_it(self) -> None:
        """AIPerf's log says 203 sent, its windows saw 200: fail, naming the run, the phase and both counts."""
        v = _verdict(judge_soak(SoakEvidence(windows=_accounted([100, 100]),
                                             runs=[_run(1, {"profiling": 203})]), LIMITS), "accounting")
        assert v.outcome == "fail"
        assert v.reason == "soak/aiperf01 profiling: AIPerf issued 203 (aiperf_log), 200 were seen"

    def test_a_window_whose_invariant_failed_fails_the_soak(self) -> None:
        windows = _accounted([100, 100, 100], balanced=[True, False, True])
        v = _verdict(judge_soak(SoakEvidence(windows=windows, runs=[_run(1, {"profiling": 300})]), LIMITS), "accounting")
        assert v.outcome == "fail" and v.reason == "the window invariant failed in soak/w0002"

    def test_a_run_that_said_nothing_of_what_it_sent_is_inconclusive(self) -> None:
        """An AIPerf run stopped before its sending-complete line, with no manifest: a loss cannot be ruled out."""
        v = _verdict(judge_soak(SoakEvidence(windows=_accounted([100, 100]), runs=[_run(1, {})]), LIMITS), "accounting")
        assert v.outcome == "inconclusive"
        assert "soak/aiperf01 said nothing of how many requests it sent" in v.reason

    def test_at_a_checkpoint_the_running_run_waits_for_its_end(self) -> None:
        """Mid-run, the AIPerf run still going is named and not judged; balanced windows so far pass."""
        v = _verdict(judge_soak(SoakEvidence(windows=_accounted([100, 100]), running="soak/aiperf01"), LIMITS), "accounting")
        assert v.outcome == "pass"
        assert v.reason.endswith("; soak/aiperf01 still running: its count is checked when it ends")

    def test_no_window_is_inconclusive(self) -> None:
        assert _verdict(judge_soak(SoakEvidence(windows=[]), LIMITS), "accounting").outcome == "inconclusive"

    def test_seeded_series_never_false_fail_and_always_catch_one_lost_request(self) -> None:
        """500 seeded soaks of 1-3 AIPerf runs and 2-40 windows: with every count matching the verdict passes
        every time (0 false fails); with one request lost in one run, or one window breached, it fails every
        time (detection 1.0). The rule counts, so its error rates are exact, not estimates."""
        rng = random.Random(20261201)
        false_fails = detected = 0
        for _ in range(500):
            n_runs = rng.randint(1, 3)
            segments = sorted(rng.randint(1, n_runs) for _ in range(rng.randint(2, 40)))
            windows = _accounted([rng.randint(0, 3000) for _ in segments], segments=segments, warmup=rng.randint(0, 4))
            runs = []
            for seg in sorted(set(segments)):
                mine = [w for w in windows if w.segment == seg]
                runs.append(_run(seg, {"profiling": sum(w.issued for w in mine),
                                       "warmup": sum(w.warmup_issued for w in mine)}))
            false_fails += _verdict(judge_soak(SoakEvidence(windows=windows, runs=runs), LIMITS), "accounting").outcome != "pass"
            k = rng.randrange(len(runs))
            lossy = [*runs[:k], _run(runs[k].segment, {**runs[k].issued, "profiling": runs[k].issued["profiling"] + 1}),
                     *runs[k + 1:]]
            breached = [msgspec.structs.replace(w, accounting_balanced=False) if i == len(windows) // 2 else w
                        for i, w in enumerate(windows)]
            detected += _verdict(judge_soak(SoakEvidence(windows=windows, runs=lossy), LIMITS), "accounting").outcome == "fail"
            detected += _verdict(judge_soak(SoakEvidence(windows=breached, runs=runs), LIMITS), "accounting").outcome == "fail"
        assert (false_fails, detected) == (0, 1000)

    def test_a_shortfall_of_a_run_the_stop_ended_is_inconclusive_not_a_loss(self) -> None:
        """SIGINT ended the run: requests it had sent and then cancelled left no record. That cannot be told
        from a lost one, so it is inconclusive; the same shortfall without the stop fails."""
        runs = [_run(1, {"profiling": 203})]
        stopped = _verdict(judge_soak(SoakEvidence(windows=_accounted([100, 100]), runs=runs,
                                                   stopped={"soak/aiperf01"}), LIMITS),
                           "accounting")
        assert stopped.outcome == "inconclusive"
        assert stopped.reason == ("2 window(s) balanced, but the stop signal ended the load before every request "
                                  "AIPerf sent was recorded: soak/aiperf01 profiling: AIPerf issued 203 (aiperf_log), "
                                  "200 were seen")
        assert _verdict(judge_soak(SoakEvidence(windows=_accounted([100, 100]), runs=runs), LIMITS), "accounting").outcome == "fail"

    def test_a_breach_in_the_window_the_stop_cut_short_is_inconclusive(self) -> None:
        """At SIGINT AIPerf dropped an open request the server still answered (a server record without a
        client record): in the window the stop cut short that is inconclusive; in any other window, a fail."""
        windows = _accounted([100, 100, 40], balanced=[True, True, False])
        runs = [_run(1, {"profiling": 241})]
        cut = _verdict(judge_soak(SoakEvidence(windows=windows, runs=runs, stopped={"soak/aiperf01"},
                                               cut_short={"soak/w0003"}), LIMITS),
                       "accounting")
        assert cut.outcome == "inconclusive"
        assert cut.reason == ("2 window(s) balanced, but the stop signal ended the load before every request AIPerf "
                              "sent was recorded: the invariant failed in soak/w0003, which it cut short; "
                              "soak/aiperf01 profiling: AIPerf issued 241 (aiperf_log), 240 were seen")
        other = _verdict(judge_soak(SoakEvidence(windows=windows, runs=runs, stopped={"soak/aiperf01"},
                                                 cut_short={"soak/w0002"}), LIMITS),
                         "accounting")
        assert other.outcome == "fail" and other.reason.startswith("the window invariant failed in soak/w0003")


class TestWindowGapVerdict:
    def test_cuts_of_one_load_pass_with_the_numbers(self) -> None:
        """Gaps of milliseconds across the cuts pass; the detail lists each window's gap."""
        v = _verdict(judge_soak(SoakEvidence(windows=_gapped([None, 0.004, 0.012])), LIMITS), "window_gap")
        assert v.outcome == "pass"
        assert v.detail.windows == [WindowGap(window="soak/w0002", gap_s=0.004, segment=1),
                                    WindowGap(window="soak/w0003", gap_s=0.012, segment=1)]
        assert v.reason.startswith("largest gap 0.012 s before soak/w0003, 0.016 s in all")

    def test_a_gap_over_one_second_fails_naming_the_window(self) -> None:
        """An AIPerf start-up between windows (9 s) fails the 1 s limit."""
        v = _verdict(judge_soak(SoakEvidence(windows=_gapped([None, 0.01, 9.0])), LIMITS), "window_gap")
        assert v.outcome == "fail"
        assert "gaps over the limit (soak/w0003 9 s)" in v.reason

    def test_many_small_gaps_over_one_percent_fail(self) -> None:
        """Gaps under 1 s each that add up to more than 1 % of the soak fail it."""
        limits = SoakLimits(max_window_gap_s=1.0, max_gap_fraction=0.001)
        v = _verdict(judge_soak(SoakEvidence(windows=_gapped([None, 0.9, 0.9])), limits), "window_gap")
        assert v.outcome == "fail" and "too much time without load" in v.reason

    def test_one_window_is_inconclusive(self) -> None:
        """With one window there is no cut to judge."""
        v = _verdict(judge_soak(SoakEvidence(windows=_gapped([None])), LIMITS), "window_gap")
        assert v.outcome == "inconclusive"


class TestExitCode:
    def test_inconclusive_exits_zero_unless_strict(self) -> None:
        """Nothing failed: exit 0, also with inconclusive verdicts; --strict makes those exit 1."""
        verdicts = judge_soak(SoakEvidence(windows=_windows([500.0] * 3)), LIMITS)
        assert any(v.outcome == "inconclusive" for v in verdicts)
        assert not any(v.outcome == "fail" for v in verdicts)
        assert exit_code(verdicts, strict=False) == 0
        assert exit_code(verdicts, strict=True) == 1
        failed = judge_soak(SoakEvidence(windows=_windows([500.0] * 3, errors=[0, 9, 9])), LIMITS)
        assert exit_code(failed, strict=False) == 1


class TestWindowAccumulator:
    def test_first_and_last_request_span_every_phase(self) -> None:
        """The window's first request is of any phase (warmup included); its last answer likewise."""
        acc = WindowAccumulator(1, T0, criteria=CorrectnessCriteria(min_pass_rate=0.5))
        acc.add_request(phase="warmup", ok=True, cause="ok", request_latency_ms=5.0, handler_ms=None,
                        model_call_ms=None, request_start_ns=T0 + 8 * 10**9, request_end_ns=T0 + 9 * 10**9)
        acc.add_request(phase="profiling", ok=True, cause="ok", request_latency_ms=5.0, handler_ms=None,
                        model_call_ms=None, request_start_ns=T0 + 9 * 10**9, request_end_ns=T0 + 20 * 10**9)
        stats = acc.close(T0 + 30 * 10**9, aiperf_launch_unix_ns=T0, aiperf_exit_unix_ns=T0 + 21 * 10**9)
        assert stats.startup_s == pytest.approx(8.0) and stats.exit_s == pytest.approx(1.0)
        assert decode_event(encode_event(SoakWindowClosed(window="w", index=1, summary=stats))).summary == stats

    def test_item_medians_and_observer_memory(self) -> None:
        """Each item's median latency per window (profiling, ok only) and the observer's samples are kept."""
        acc = WindowAccumulator(2, T0, criteria=CorrectnessCriteria(min_pass_rate=0.5), segment=1)
        for ms, item in ((10.0, "a"), (30.0, "a"), (20.0, "a"), (500.0, "b")):
            acc.add_request(phase="profiling", ok=True, cause="ok", request_latency_ms=ms + 1, handler_ms=ms,
                            model_call_ms=None, request_start_ns=T0, request_end_ns=T0 + 1, item_id=item)
        acc.add_request(phase="warmup", ok=True, cause="ok", request_latency_ms=9e9, handler_ms=9e9,
                        model_call_ms=None, request_start_ns=T0, request_end_ns=T0 + 1, item_id="b")
        acc.add_process("orchestrator", 100 * MIB)
        acc.add_process("aiperf", 800 * MIB)
        stats = acc.close(T0 + WINDOW_NS)
        assert stats.item_server_ms == {"a": 20.0, "b": 500.0} and stats.item_client_ms == {"a": 21.0, "b": 501.0}
        assert stats.orchestrator_rss.median_bytes == 100 * MIB and stats.aiperf_rss.peak_bytes == 800 * MIB
        assert stats.segment == 1

    def test_kept_windows_share_one_key_per_item(self) -> None:
        """Item ids arrive as new strings with each request; the closed windows a soak keeps for its
        verdicts share one key object per item (a window's medians then cost about half the memory)."""
        closed = []
        for index in (1, 2):
            acc = WindowAccumulator(index, T0, criteria=CorrectnessCriteria(min_pass_rate=0.5))
            for item in ("item-07", "item-08"):
                fresh = "".join(list(item))  # a new string object, as decoded from a request
                acc.add_request(phase="profiling", ok=True, cause="ok", request_latency_ms=2.0, handler_ms=1.0,
                                model_call_ms=None, request_start_ns=T0, request_end_ns=T0 + 1, item_id=fresh)
            closed.append(acc.close(T0 + WINDOW_NS))
        first, second = (list(w.item_server_ms) + list(w.item_client_ms) for w in closed)
        assert first == second == ["item-07", "item-08"] * 2
        assert all(a is b for a, b in zip(first, second, strict=True))


class TestSampledMemory:
    """With every sample (the soak's tracker) and the load's span, memory is judged on the samples."""

    @staticmethod
    def _series(minutes: int, mib_per_s: float, seed: int) -> SampleSeries:
        rng = np.random.default_rng(seed)
        series = SampleSeries()
        for s in range(minutes * 60):
            series.add(T0 + s * 10**9, 400 + mib_per_s * s + rng.normal(0, 2))
        return series

    def test_a_fast_leak_fails_in_a_short_soak_and_aiperf_is_judged(self) -> None:
        """A 4-minute soak of two 2-minute windows: the server leaking 3 MiB/s FAILs server_rss on its growth,
        while aqbench and AIPerf (flat) stay inconclusive: 3 judged minutes are too few for a slope."""
        windows = _windows([400.0, 400.0])
        span = (T0, T0 + 240 * 10**9)
        samples = {"server_rss": self._series(4, 3.0, 1), "orchestrator_rss": self._series(4, 0.0, 2),
                   "aiperf_rss": self._series(4, 0.0, 3)}
        verdicts = judge_soak(SoakEvidence(windows=windows, samples=samples, load_span_ns=span), SoakLimits())
        server, own, aiperf = (_verdict(verdicts, m) for m in ("server_rss", "orchestrator_rss", "aiperf_rss"))
        assert server.outcome == "fail" and own.outcome == "inconclusive" and aiperf.outcome == "inconclusive"
        assert isinstance(server.detail, SampledMemoryDetail)
        assert server.detail.samples == 180 and server.detail.span_s == pytest.approx(170, abs=10)
        assert server.detail.growth_interval is not None and server.detail.growth_interval[0] > 64
        assert "the load generator's (AIPerf's)" in aiperf.detail.source  # type: ignore[union-attr]
        assert exit_code(verdicts, strict=False) == 1

    def test_a_flat_hour_passes_with_its_detectable_slope(self) -> None:
        """An hour of flat samples PASSes server_rss and journals the smallest slope it could have failed."""
        windows = _windows([400.0] * 12)
        verdicts = judge_soak(SoakEvidence(windows=windows, samples={"server_rss": self._series(60, 0.0, 4)},
                                           load_span_ns=(T0, T0 + 3600 * 10**9)), SoakLimits())
        server = _verdict(verdicts, "server_rss")
        assert server.outcome == "pass", server.reason
        assert isinstance(server.detail, SampledMemoryDetail) and server.detail.detectable_slope is not None
        assert 8 < server.detail.detectable_slope < 20

    def test_aiperf_after_handovers_is_judged_per_generation(self) -> None:
        """After handovers aiperf_rss is judged per AIPerf process (judge.generations): an hour of ~3-minute
        processes, each starting well above the first, PASSes where the one sawtooth series would not, the
        detail lists the processes and journals; a leak carried from process to process FAILs. One process
        keeps the single-series rule."""
        from sampled_series import generation_series

        from orchestrator.judge.generations import Generation

        def gens(step: float) -> list[Generation]:
            return [Generation(pid=pid, start_s=T0 / 1e9 + s, times_s=[T0 / 1e9 + v for v in t],
                               values=[float(v) for v in y], requests=100)
                    for pid, s, t, y in generation_series(np.random.default_rng(5), 3600, step=step)]

        windows = _windows([400.0] * 12)
        span = (T0, T0 + 3600 * 10**9)
        flat = gens(0.0)
        sawtooth = SampleSeries()
        for g in flat:
            for t, v in zip(g.times_s, g.values, strict=True):
                sawtooth.add(int(t * 1e9), v)
        samples = {"server_rss": self._series(60, 0.0, 4), "aiperf_rss": sawtooth}
        aiperf = _verdict(judge_soak(SoakEvidence(windows=windows, samples=samples, load_span_ns=span,
                                                  aiperf_generations=flat), SoakLimits()), "aiperf_rss")
        assert aiperf.outcome == "pass", aiperf.reason
        assert isinstance(aiperf.detail, SampledMemoryDetail)
        assert len(aiperf.detail.generations) == len(flat)
        assert aiperf.detail.n == sum(g.level_mib is not None for g in aiperf.detail.generations[1:]) >= 15
        assert aiperf.detail.generations[1].start_s == pytest.approx(flat[1].start_s - T0 / 1e9, abs=1e-3)
        assert aiperf.detail.detectable_slope is not None and "per AIPerf process generation" in aiperf.detail.source
        event = SoakVerdict(source="soak", metric="aiperf_rss", passed=True, outcome="pass", detail=aiperf.detail)
        assert decode_event(encode_event(event)) == event
        single = _verdict(judge_soak(SoakEvidence(windows=windows, samples=samples, load_span_ns=span,
                                                  aiperf_generations=flat[:1]), SoakLimits()), "aiperf_rss")
        whole = _verdict(judge_soak(SoakEvidence(windows=windows, samples=samples, load_span_ns=span), SoakLimits()), "aiperf_rss")
        assert single.detail == whole.detail and whole.outcome != "pass", whole.reason
        leak = _verdict(judge_soak(SoakEvidence(windows=windows, samples=samples, load_span_ns=span,
                                                aiperf_generations=gens(10.0)), SoakLimits()), "aiperf_rss")
        assert leak.outcome == "fail" and "across generations" in leak.reason
        # Four successors: too few for a rank interval at 98 %, so the slope's interval is open at both ends; the
        # journal has no infinity, so the verdict journals none and reads back as written.
        few = _verdict(judge_soak(SoakEvidence(windows=windows, samples=samples, load_span_ns=span,
                                               aiperf_generations=flat[:5]), SoakLimits()), "aiperf_rss")
        assert isinstance(few.detail, SampledMemoryDetail) and few.detail.n == 4, few.reason
        assert few.detail.interval is None and few.detail.growth_interval is None
        event = SoakVerdict(source="soak", metric="aiperf_rss", passed=few.passed, outcome=few.outcome,
                            interval=few.detail.interval, detail=few.detail)
        assert decode_event(encode_event(event)) == event
