"""The sweep's point judge: each SLO decided only on enough evidence, and both error rates on seeded
synthetic latencies (autocorrelated, heavy-tailed)."""

from __future__ import annotations

import random

import pytest

from orchestrator.config import CorrectnessCriteria, SloConfig
from orchestrator.sweep.judge import (
    Baseline,
    PointRequest,
    judge_point,
    point_stats,
    quantile_check,
    rate_check,
    saturation_signs,
)

DET = CorrectnessCriteria(deterministic=True)


def _latencies(rng: random.Random, n: int, median_ms: float, *, phi: float = 0.6, sigma: float = 0.25) -> list[float]:
    """AR(1) log-normal latencies with an occasional heavy (Pareto) straggler: realistic serving noise."""
    out, z = [], 0.0
    for _ in range(n):
        z = phi * z + (1 - phi * phi) ** 0.5 * rng.gauss(0.0, 1.0)
        v = median_ms * 2.718281828 ** (sigma * z)
        if rng.random() < 0.003:
            v *= rng.paretovariate(3.0)
        out.append(v)
    return out


def _answered(item: str, answer: str, *, complete: bool = True, latency: float = 100.0) -> PointRequest:
    return PointRequest(ok=True, latency_ms=latency, model_call_ms=latency / 2, item_id=item, arm="audio",
                        kind="count", answer=answer, complete=complete, verdict="correct", start_ns=0, end_ns=10**9)


class TestQuantileCheck:
    def test_too_few_requests_is_inconclusive_and_says_how_many(self) -> None:
        """A p99 over 50 requests all within the limit cannot pass: inconclusive, naming the 230 needed."""
        check = quantile_check("p99_latency", [100.0] * 50, 0.99, 1000.0, 0.90)
        assert check.outcome == "inconclusive"
        assert "a pass needs at least 230 with none beyond" in check.reason

    def test_enough_requests_within_the_limit_pass(self) -> None:
        """230 requests within the limit pass a p99 at 90% confidence."""
        assert quantile_check("p99_latency", [100.0] * 230, 0.99, 1000.0, 0.90).outcome == "pass"

    def test_many_beyond_fail_even_on_few_requests(self) -> None:
        """5 of 20 requests beyond a p90 limit, spread through the run, is a fail: far more than 10% could explain."""
        check = quantile_check("p90_latency", [100.0, 110.0, 120.0, 5000.0] * 5, 0.90, 1000.0, 0.90)
        assert check.outcome == "fail"
        assert check.beyond == 5 and check.reason.startswith("p90 5000 ms > 1000 ms")

    @pytest.mark.parametrize("seed", range(3))
    def test_false_fails_stay_rare_on_healthy_noise(self, seed: int) -> None:
        """At a healthy load (true p99 well under the limit), autocorrelated heavy-tailed latencies fail the
        p99 check in under 10% of 200 seeded points."""
        rng = random.Random(seed)
        fails = sum(quantile_check("p99_latency", _latencies(rng, 400, 400.0), 0.99, 1200.0, 0.90).outcome == "fail"
                    for _ in range(200))
        assert fails < 20

    @pytest.mark.parametrize("seed", range(3))
    def test_power_against_a_doubled_tail(self, seed: int) -> None:
        """When latency has doubled past the limit, 400 requests fail the p99 check at least 95% of the time."""
        rng = random.Random(seed)
        fails = sum(quantile_check("p99_latency", _latencies(rng, 400, 1000.0), 0.99, 1200.0, 0.90).outcome == "fail"
                    for _ in range(100))
        assert fails >= 95


class TestRateCheck:
    def test_half_failed_fails(self) -> None:
        """Half the requests failing breaks a 1% error-rate limit on 20 requests."""
        assert rate_check(10, 20, 0.01, 0.90).outcome == "fail"

    def test_none_failed_on_too_few_is_inconclusive(self) -> None:
        """No failure in 20 requests cannot show a rate under 1%."""
        check = rate_check(0, 20, 0.01, 0.90)
        assert check.outcome == "inconclusive" and "at least 230" in check.reason

    def test_an_overloaded_servers_refusals_are_named_by_cause(self) -> None:
        """Failures are said by cause in the verdict, so an overload's HTTP 429s read as server_busy."""
        reqs = [PointRequest(ok=True, latency_ms=1.0, start_ns=i) if i % 4
                else PointRequest(ok=False, cause="server_busy", start_ns=i) for i in range(1, 13)]
        check = next(c for c in judge_point(reqs, SloConfig(), None, DET) if c.slo == "error_rate")
        assert check.outcome == "fail" and check.reason.startswith("3 of 12 failed (25.0%: server_busy 3)")

    def test_a_zero_limit_fails_on_one_failure(self) -> None:
        """max_error_rate 0: any failure fails, none passes."""
        assert rate_check(1, 500, 0.0, 0.90).outcome == "fail"
        assert rate_check(0, 5, 0.0, 0.90).outcome == "pass"


class TestJudgePoint:
    SLO = SloConfig(p90_latency_ms=1000.0, max_error_rate=0.1, min_answers=5)

    def _baseline(self) -> Baseline:
        return Baseline.of([_answered(f"i{k}", f"answer {k}") for k in range(10)])

    def test_equal_whole_answers_pass_every_slo(self) -> None:
        """30 fast answers equal to concurrency 1's pass latency, errors, answers and completeness."""
        reqs = [_answered(f"i{k % 10}", f"answer {k % 10}") for k in range(30)]
        checks = {c.slo: c.outcome for c in judge_point(reqs, self.SLO, self._baseline(), DET)}
        assert checks == {"p90_latency": "pass", "error_rate": "pass", "answers": "pass", "complete_outputs": "pass"}

    def test_another_requests_answer_fails_answers(self) -> None:
        """One answer that is another item's (a swap under load) fails a deterministic model's answers SLO."""
        reqs = [_answered(f"i{k % 10}", f"answer {k % 10}") for k in range(29)] + [_answered("i3", "answer 4")]
        check = next(c for c in judge_point(reqs, self.SLO, self._baseline(), DET) if c.slo == "answers")
        assert check.outcome == "fail"
        assert check.reason == "1 of 30 answers differ from concurrency 1, e.g. i3|audio: 'answer 4' instead of 'answer 3'"

    def test_a_cut_answer_fails_complete_outputs(self) -> None:
        """An answer incomplete under load whose concurrency-1 answer was whole fails complete_outputs."""
        reqs = [_answered(f"i{k % 10}", f"answer {k % 10}") for k in range(29)] + [_answered("i2", "answer 2", complete=False)]
        check = next(c for c in judge_point(reqs, self.SLO, self._baseline(), DET) if c.slo == "complete_outputs")
        assert check.outcome == "fail" and "i2|audio" in check.reason

    def test_without_a_baseline_answers_are_inconclusive(self) -> None:
        """No concurrency-1 answers: the answers SLO cannot decide, and says why."""
        reqs = [_answered("i1", "a")] * 30
        check = next(c for c in judge_point(reqs, self.SLO, None, DET) if c.slo == "answers")
        assert check.outcome == "inconclusive" and "baseline run failed" in check.reason

    def test_sampling_models_are_held_to_their_gates(self) -> None:
        """A sampling model's answers may differ; its min_pass_rate gate decides instead."""
        crit = CorrectnessCriteria(deterministic=False, min_pass_rate=0.9, arm="audio")
        wrong = [PointRequest(ok=True, latency_ms=1.0, item_id=f"i{k}", arm="audio", kind="count", answer="x",
                              complete=True, verdict="wrong" if k % 2 else "correct") for k in range(20)]
        check = next(c for c in judge_point(wrong, self.SLO, self._baseline(), crit) if c.slo == "answers")
        assert check.outcome == "fail" and "arm:audio pass rate 10/20 below 0.9" in check.reason

    def test_stats_count_errors_by_cause_and_throughput(self) -> None:
        """Point numbers: errors by cause, achieved requests/s over the span, p99 apart from model_call."""
        reqs = [_answered("i1", "a", latency=200.0)] * 8 + [PointRequest(ok=False, cause="http_4xx")] * 2
        checks = judge_point(reqs, self.SLO, self._baseline(), DET)
        stats = point_stats(reqs, checks, span_s=5.0)
        assert stats.errors_by_cause == {"http_4xx": 2}
        assert stats.achieved_rps == 2.0 and stats.goodput_rps == 1.6
        assert stats.latency_p99_ms == 200.0 and stats.model_call_p99_ms == 100.0


def _timed(n: int, interval_s: float, latency_ms: list[float]) -> list[PointRequest]:
    """n requests started every `interval_s`, each ending after its latency."""
    return [PointRequest(ok=True, latency_ms=lat, start_ns=int(i * interval_s * 1e9),
                         end_ns=int(i * interval_s * 1e9 + lat * 1e6)) for i, lat in enumerate(latency_ms[:n])]


class TestSaturation:
    def test_a_server_that_keeps_up_shows_no_sign(self) -> None:
        """Requests every 0.5 s answered in a steady 200 ms: offered 2 req/s completed, no queue."""
        assert saturation_signs(_timed(30, 0.5, [200.0] * 30), offered_rps=2.0, share=0.1, queueing_ratio=1.5) == []

    def test_a_building_queue_is_named(self) -> None:
        """Latency growing 150 ms per request while 2 req/s are offered: completions fall behind and the
        last third's median is many times the first's; both signs are said."""
        reqs = _timed(30, 0.5, [200.0 + 150.0 * i for i in range(30)])
        signs = saturation_signs(reqs, offered_rps=2.0, share=0.1, queueing_ratio=1.5)
        assert len(signs) == 2
        assert signs[0] == "completed 1.54 req/s of 2 offered (23% short, more than 10%)"
        assert signs[1].startswith("latency grew within the run: median")

    def test_closed_loop_judges_only_the_queue(self) -> None:
        """Without an offered rate (closed loop) only latency growth is a sign; too few requests say nothing."""
        reqs = _timed(30, 0.5, [200.0 + 150.0 * i for i in range(30)])
        assert [s.split(":")[0] for s in saturation_signs(reqs, offered_rps=None, share=0.1, queueing_ratio=1.5)] == [
            "latency grew within the run"]
        assert saturation_signs(reqs[:8], offered_rps=2.0, share=0.1, queueing_ratio=1.5) == []

    def test_a_mix_of_fast_and_slow_requests_is_not_a_queue(self) -> None:
        """Medians drifting from 25 to 40 ms among requests of which some take 400 ms: within the first
        third's own spread, so not queueing (the false alarm a real 1 req/s run once raised)."""
        lat = [25.0, 25.0, 400.0] * 4 + [40.0, 40.0, 400.0] * 6
        assert saturation_signs(_timed(30, 1.0, lat), offered_rps=1.0, share=0.1, queueing_ratio=1.5) == []
