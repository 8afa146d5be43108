"""Both error rates of the sweep's SLO decisions on seeded, realistic noise (autocorrelated, heavy-tailed,
drifting within a point, few requests), per point and through the capacity search; and what a point can
detect, stated before the sweep runs."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from statistics import NormalDist

import pytest

from orchestrator.config import CorrectnessCriteria, SloConfig
from orchestrator.sweep.judge import PointRequest, judge_point, quantile_check, rate_check, worst
from orchestrator.sweep.power import plan_power
from orchestrator.sweep.search import Judged, conclude, next_point

Z99 = NormalDist().inv_cdf(0.99)
SIGMA = 0.3


def _latencies(rng: random.Random, n: int, median_ms: float, *, phi: float, drift: float = 0.0,
               heavy: float = 0.0) -> list[float]:
    """AR(1) log-normal latencies in start order (lag-1 correlation `phi`), the log median moving linearly by
    `drift` across the run, and a share `heavy` of Pareto stragglers."""
    out, z = [], rng.gauss(0.0, 1.0)
    for i in range(n):
        z = phi * z + math.sqrt(1.0 - phi * phi) * rng.gauss(0.0, 1.0)
        v = median_ms * math.exp(SIGMA * z + drift * (i / n - 0.5))
        if heavy and rng.random() < heavy:
            v *= rng.paretovariate(2.5)
        out.append(v)
    return out


def _true_p99(median_ms: float) -> float:
    """The stationary p99 of `_latencies` without drift or stragglers: the limit at the boundary."""
    return median_ms * math.exp(SIGMA * Z99)


def _share(outcomes: Sequence[str], which: str) -> float:
    return outcomes.count(which) / len(outcomes)


class TestLatencyFalseFails:
    @pytest.mark.parametrize(("phi", "n"), [(0.0, 400), (0.6, 400), (0.9, 400), (0.9, 60), (0.97, 1000)])
    def test_at_the_boundary_fails_stay_under_the_claimed_rate(self, phi: float, n: int) -> None:
        """True p99 exactly at the limit (the hardest healthy case): at 90% confidence at most 10% of points
        may fail, however correlated the latencies (a plain binomial test failed 19-25% at phi 0.9)."""
        rng = random.Random(int(phi * 100) + n)
        outcomes = [quantile_check("p99_latency", _latencies(rng, n, 400.0, phi=phi), 0.99, _true_p99(400.0),
                                   0.90).outcome for _ in range(300)]
        assert _share(outcomes, "fail") <= 0.10
        assert _share(outcomes, "pass") <= 0.10  # and false passes at the boundary are held as tightly

    def test_drift_within_a_point_costs_evidence_not_false_fails(self) -> None:
        """The median drifting by 30% across a run whose p99 stays 20% under the limit: fails stay rare."""
        rng = random.Random(7)
        outcomes = [quantile_check("p99_latency", _latencies(rng, 400, 400.0, phi=0.6, drift=0.3), 0.99,
                                   1.2 * _true_p99(400.0) * math.exp(0.15), 0.90).outcome for _ in range(300)]
        assert _share(outcomes, "fail") <= 0.05

    def test_rare_heavy_stragglers_under_a_healthy_p99_do_not_fail(self) -> None:
        """0.3% Pareto stragglers (a tail far beyond the limit, but rarer than the 1% a p99 allows)."""
        rng = random.Random(11)
        outcomes = [quantile_check("p99_latency", _latencies(rng, 400, 400.0, phi=0.6, heavy=0.003), 0.99,
                                   1.3 * _true_p99(400.0), 0.90).outcome for _ in range(300)]
        assert _share(outcomes, "fail") <= 0.05

    def test_few_requests_never_pass_a_p99_and_rarely_fail_it(self) -> None:
        """30 requests cannot show a p99 (a pass needs 230): inconclusive, not a false pass or fail."""
        rng = random.Random(3)
        outcomes = [quantile_check("p99_latency", _latencies(rng, 30, 400.0, phi=0.6), 0.99, _true_p99(400.0),
                                   0.90).outcome for _ in range(300)]
        assert _share(outcomes, "pass") == 0.0 and _share(outcomes, "fail") <= 0.10


class TestLatencyPower:
    @pytest.mark.parametrize(("phi", "n"), [(0.0, 60), (0.6, 230), (0.9, 400)])
    def test_a_doubled_latency_fails(self, phi: float, n: int) -> None:
        """Latency doubled (the p99 ~2x the limit, what users feel as a broken SLO) fails at least 90% of
        points, even at 60 requests and correlated latencies."""
        rng = random.Random(n)
        limit = _true_p99(400.0)
        outcomes = [quantile_check("p99_latency", _latencies(rng, n, 800.0, phi=phi), 0.99, limit, 0.90).outcome
                    for _ in range(200)]
        assert _share(outcomes, "fail") >= 0.90

    def test_healthy_independent_latencies_pass_with_enough_requests(self) -> None:
        """p99 well under the limit (limit 1.5x the true p99) on 400 independent-ish requests passes most points."""
        rng = random.Random(5)
        outcomes = [quantile_check("p99_latency", _latencies(rng, 400, 400.0, phi=0.3), 0.99,
                                   1.5 * _true_p99(400.0), 0.90).outcome for _ in range(200)]
        assert _share(outcomes, "pass") >= 0.80


def _bursty_failures(rng: random.Random, n: int, rate: float, stay: float) -> list[bool]:
    """A two-state Markov chain of failures with stationary share `rate`; `stay` is how likely a failure is
    followed by another (bursts of server_busy while a queue is full)."""
    enter = rate * (1.0 - stay) / (1.0 - rate)
    out, failing = [], rng.random() < rate
    for _ in range(n):
        failing = rng.random() < (stay if failing else enter)
        out.append(failing)
    return out


class TestErrorRate:
    def test_bursts_at_the_limit_fail_at_most_the_claimed_rate(self) -> None:
        """Failures in bursts (a failure followed by another 70% of the time) at exactly the 5% limit: at most
        10% of points fail; counting them as independent would fail far more of them."""
        rng = random.Random(13)
        runs = [_bursty_failures(rng, 200, 0.05, 0.7) for _ in range(400)]
        corrected = [rate_check(sum(f), len(f), 0.05, 0.90, failures_in_order=f).outcome for f in runs]
        plain = [rate_check(sum(f), len(f), 0.05, 0.90).outcome for f in runs]
        assert _share(corrected, "fail") <= 0.10
        assert _share(plain, "fail") > 0.15  # the problem the correction solves, on the same runs

    def test_bursts_at_three_times_the_limit_fail(self) -> None:
        """15% failing in bursts against a 5% limit: at least 80% of 300-request points fail."""
        rng = random.Random(17)
        runs = [_bursty_failures(rng, 300, 0.15, 0.7) for _ in range(200)]
        outcomes = [rate_check(sum(f), len(f), 0.05, 0.90, failures_in_order=f).outcome for f in runs]
        assert _share(outcomes, "fail") >= 0.80


def _stub_point(rate: float, knee: float, rng: random.Random, n: int) -> list[PointRequest]:
    """A stub server: latency rises sharply above `knee` req/s (queueing, growing within the point), on
    correlated heavy-tailed noise with server_busy bursts once past the knee."""
    median = 300.0 if rate <= knee else 300.0 * (1.0 + 3.0 * (rate - knee))
    lat = _latencies(rng, n, median, phi=0.8, heavy=0.003, drift=0.0 if rate <= knee else 0.5)
    busy = _bursty_failures(rng, n, 0.01 if rate <= knee else 0.1, 0.5)
    return [PointRequest(ok=not b, cause="server_busy" if b else "ok", latency_ms=None if b else v,
                         start_ns=i * 10**8) for i, (v, b) in enumerate(zip(lat, busy, strict=True))]


class TestCapacitySearch:
    def test_finds_the_knee_within_one_step_on_realistic_noise(self) -> None:
        """Points 1..8 req/s, the knee at 5.5, p99 limit 1.6x the healthy p99, 5% errors, 400 requests a point:
        over 30 seeds the capacity is never above the knee and is bracketed at [5, 6] in at least 90%."""
        slo = SloConfig(p99_latency_ms=1.6 * 300.0 * math.exp(SIGMA * Z99), max_error_rate=0.05,
                        answers=False, complete_outputs=False)
        right = 0
        for seed in range(30):
            rng = random.Random(seed)
            judged: dict[float, Judged] = {}
            runs: dict[float, list[PointRequest]] = {}
            while (value := next_point([1.0, 2, 3, 4, 5, 6, 7, 8], judged, mode="rate", repeats=1,
                                       refine=0)) is not None:
                runs[value] = runs.get(value, []) + _stub_point(value, 5.5, rng, 400)
                checks = judge_point(runs[value], slo, None, CorrectnessCriteria())
                judged[value] = Judged(outcome=worst([c.outcome for c in checks]), runs=1 + (value in judged),
                                       checks=checks)
            c = conclude(judged, mode="rate")
            assert c.capacity is None or c.capacity <= 5.5
            right += (c.outcome, c.capacity, c.lowest_failing) == ("bracketed", 5.0, 6.0)
        assert right >= 27


class TestPlanPower:
    def test_a_p99_at_60_requests_cannot_pass_and_says_what_it_detects(self) -> None:
        """60 requests: a p99 pass needs 230; a fail needs 3 beyond; it detects ~6.5% beyond with 90% power."""
        power = plan_power("p99_latency", 60, 0.01, 0.90)
        assert (power.pass_needs, power.fail_at) == (230, 3)
        assert power.detects_share is not None and 0.05 < power.detects_share < 0.09
        assert power.statement.startswith("p99_latency at 60 requests: cannot pass (needs 230 with none beyond the limit)")

    def test_the_stated_detectable_share_is_detected(self) -> None:
        """Independent requests at the stated share beyond the limit fail with at least the stated 90% power."""
        power = plan_power("p90_latency", 100, 0.10, 0.90)
        assert power.detects_share is not None
        rng = random.Random(2)
        outcomes = [quantile_check("p90_latency", [2.0 if rng.random() < power.detects_share else 1.0
                                                   for _ in range(100)], 0.90, 1.5, 0.90).outcome
                    for _ in range(400)]
        assert _share(outcomes, "fail") >= 0.86

    def test_answers_state_the_rate_of_differing_answers_detected(self) -> None:
        """60 compared answers detect a 3.8% rate of differing answers with 90% power (1 - 0.1^(1/60))."""
        power = plan_power("answers", 60, 0.0, 0.90)
        assert power.fail_at == 1 and power.detects_share == pytest.approx(0.0376, abs=1e-3)
