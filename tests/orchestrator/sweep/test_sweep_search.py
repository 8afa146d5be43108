"""The sweep's search: walk up, stop at the first failure, rerun what could not decide, halve the bracket;
and the capacity concluded from the judged points (bracketed, undecided, none)."""

from __future__ import annotations

import random

from orchestrator.config import CorrectnessCriteria, SloConfig
from orchestrator.events import SloCheck
from orchestrator.sweep.judge import PointRequest, judge_point, worst
from orchestrator.sweep.search import Judged, conclude, gate_runs, gated_tail, next_batch, next_point

PASS = Judged(outcome="pass")
FAIL = Judged(outcome="fail", checks=[SloCheck(slo="p99_latency", outcome="fail", reason="p99 9100 ms > 8000 ms")])
UNDECIDED = Judged(outcome="inconclusive", checks=[SloCheck(slo="error_rate", outcome="inconclusive",
                                                            reason="too few requests")])


def _stub_server(rate: float, knee: float, rng: random.Random, n: int = 500) -> list[PointRequest]:
    """A stub server whose latency rises sharply (queueing) above `knee` req/s, with autocorrelated noise."""
    out, z = [], 0.0
    for _ in range(n):
        z = 0.5 * z + 0.87 * rng.gauss(0.0, 1.0)
        base = 300.0 if rate <= knee else 300.0 * (1.0 + 4.0 * (rate - knee))
        out.append(PointRequest(ok=True, latency_ms=base * 2.718281828 ** (0.2 * z)))
    return out


def _sweep(points: list[float], knee: float, seed: int, refine: int) -> tuple[dict[float, Judged], list[float]]:
    rng = random.Random(seed)
    slo = SloConfig(p99_latency_ms=800.0, answers=False, complete_outputs=False)
    judged: dict[float, Judged] = {}
    order = []
    while (value := next_point(points, judged, mode="rate", repeats=1, refine=refine)) is not None:
        checks = judge_point(_stub_server(value, knee, rng), slo, None, CorrectnessCriteria())
        judged[value] = Judged(outcome=worst([c.outcome for c in checks]), runs=1, checks=checks)
        order.append(value)
    return judged, order


class TestSearch:
    def test_finds_a_known_knee_within_one_step(self) -> None:
        """Latency rising sharply above 5.5 req/s: over seeds, the bracket is [5, 6] (points 1..8 step 1)."""
        for seed in range(5):
            judged, order = _sweep([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], knee=5.5, seed=seed, refine=0)
            c = conclude(judged, mode="rate")
            assert (c.outcome, c.capacity, c.lowest_failing) == ("bracketed", 5.0, 6.0)
            assert order == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # nothing above the first failure is run

    def test_refine_halves_the_bracket(self) -> None:
        """With refine 2 on points 1, 2, 4, 8 and a knee at 5.5, midpoints 6 then 5 narrow [4, 8] to [5, 6]."""
        judged, order = _sweep([1.0, 2.0, 4.0, 8.0], knee=5.5, seed=1, refine=2)
        assert order == [1.0, 2.0, 4.0, 8.0, 6.0, 5.0]
        c = conclude(judged, mode="rate")
        assert (c.capacity, c.lowest_failing) == (5.0, 6.0)

    def test_an_undecided_point_is_rerun_once(self) -> None:
        """An inconclusive point is asked again before the walk goes on, and only `repeats` times."""
        assert next_point([1.0, 2.0], {1.0: UNDECIDED}, mode="rate", repeats=1, refine=0) == 1.0
        assert next_point([1.0, 2.0], {1.0: Judged(outcome="inconclusive", runs=2)}, mode="rate", repeats=1,
                          refine=0) == 2.0

    def test_concurrency_midpoints_are_whole(self) -> None:
        """Between concurrency 2 and 3 nothing lies: no midpoint; between 2 and 8 it is 5."""
        assert next_point([1, 2, 3], {1: PASS, 2: PASS, 3: FAIL}, mode="concurrency", repeats=1, refine=3) is None
        assert next_point([1, 2, 8], {1: PASS, 2: PASS, 8: FAIL}, mode="concurrency", repeats=1, refine=3) == 5


def _batched(points: list[float], knee: float, seed: int, refine: int,
             extend: int = 0) -> tuple[dict[float, Judged], list[list[float]]]:
    rng = random.Random(seed)
    slo = SloConfig(p99_latency_ms=800.0, answers=False, complete_outputs=False)
    judged: dict[float, Judged] = {}
    batches = []
    while values := next_batch(points, judged, mode="rate", repeats=1, refine=refine, extend=extend):
        for value in values:
            checks = judge_point(_stub_server(value, knee, rng), slo, None, CorrectnessCriteria())
            runs = judged[value].runs + 1 if value in judged else 1
            judged[value] = Judged(outcome=worst([c.outcome for c in checks]), runs=runs, checks=checks)
        batches.append(values)
    return judged, batches


class TestBatches:
    def test_finds_a_known_knee_within_one_step_in_batches(self) -> None:
        """The same stub server, the points run in batches (one AIPerf process each): the configured grid is
        one batch, each midpoint another; the bracket is still [5, 6], over seeds."""
        for seed in range(5):
            judged, batches = _batched([1.0, 2.0, 4.0, 8.0], knee=5.5, seed=seed, refine=2)
            c = conclude(judged, mode="rate", points=[1.0, 2.0, 4.0, 8.0])
            assert (c.outcome, c.capacity, c.lowest_failing) == ("bracketed", 5.0, 6.0)
            assert batches == [[1.0, 2.0, 4.0, 8.0], [6.0], [5.0]]

    def test_reruns_come_first_and_only_below_a_failure(self) -> None:
        """Undecided points below the lowest failure are rerun together; one above it never is; then points
        not yet run below the failure; then the midpoint; nothing once refined."""
        judged = {1.0: UNDECIDED, 2.0: UNDECIDED, 4.0: FAIL, 8.0: UNDECIDED}
        assert next_batch([1.0, 2.0, 4.0, 8.0], judged, mode="rate", repeats=1, refine=1) == [1.0, 2.0]
        judged = {1.0: PASS, 4.0: FAIL, 8.0: UNDECIDED}
        assert next_batch([1.0, 2.0, 4.0, 8.0], judged, mode="rate", repeats=1, refine=1) == [2.0]
        judged = {1.0: PASS, 2.0: PASS, 4.0: FAIL, 8.0: FAIL}
        assert next_batch([1.0, 2.0, 4.0, 8.0], judged, mode="rate", repeats=1, refine=1) == [3.0]
        # A point still undecided after its reruns sits at the boundary: the midpoint is taken below it.
        at_limit = Judged(outcome="inconclusive", runs=2)
        judged = {1.0: PASS, 2.0: at_limit, 4.0: FAIL, 8.0: FAIL}
        assert next_batch([1.0, 2.0, 4.0, 8.0], judged, mode="rate", repeats=1, refine=1) == [1.5]
        assert next_batch([1.0, 2.0, 4.0, 8.0], {**judged, 3.0: PASS}, mode="rate", repeats=1, refine=1) == []
        assert next_batch([1.0, 2.0], {1.0: PASS, 2.0: PASS}, mode="rate", repeats=1, refine=1) == []

    def test_the_likely_midpoint_runs_beside_the_reruns(self) -> None:
        """1 held, 2 and 4 undecided, 8 broke: the reruns of 2 and 4, then the midpoint below 2 (an undecided point
        taken as not passed, as after its rerun), in one batch; none without a capacity, a bracket or `refine`."""
        judged = {1.0: PASS, 2.0: UNDECIDED, 4.0: UNDECIDED, 8.0: FAIL}
        assert next_batch([1.0, 2.0, 4.0, 8.0], judged, mode="rate", repeats=1, refine=1) == [2.0, 4.0, 1.5]
        assert next_batch([1.0, 2.0, 4.0, 8.0], judged, mode="rate", repeats=1, refine=0) == [2.0, 4.0]
        assert next_batch([1.0, 2.0, 4.0, 8.0], {**judged, 8.0: UNDECIDED}, mode="rate", repeats=1,
                          refine=1) == [2.0, 4.0, 8.0]
        assert next_batch([1.0, 2.0, 4.0, 8.0], {**judged, 1.0: UNDECIDED}, mode="rate", repeats=1,
                          refine=1) == [1.0, 2.0, 4.0]
        # A configured point not run yet below the failure comes before any midpoint.
        assert next_batch([1.0, 2.0, 4.0, 8.0], {1.0: PASS, 4.0: UNDECIDED, 8.0: FAIL}, mode="rate", repeats=1,
                          refine=1) == [4.0]

    def test_runs_a_pass_needs_share_the_first_batch(self) -> None:
        """Where one run cannot pass (the plan's pass_needs beyond the point's requests), every fresh point gets
        its runs in its first batch, first runs first, never more than 1 + repeats; then nothing is rerun."""
        assert next_batch([1.0, 1.5], {}, mode="rate", repeats=1, refine=1, runs=2) == [1.0, 1.5, 1.0, 1.5]
        assert next_batch([1.0, 1.5], {}, mode="rate", repeats=1, refine=1, runs=5) == [1.0, 1.5, 1.0, 1.5]
        assert next_batch([1.0, 1.5], {}, mode="rate", repeats=0, refine=1, runs=2) == [1.0, 1.5]
        twice = Judged(outcome="inconclusive", runs=2)
        assert next_batch([1.0, 1.5], {1.0: twice, 1.5: twice}, mode="rate", repeats=1, refine=1, runs=2) == []

    def test_a_midpoint_overtaken_by_a_passing_rerun_does_not_spend_refine(self) -> None:
        """The midpoint 1.5 ran beside the reruns, then 2 passed on its rerun and 4 failed: the capacity is 2, so
        1.5 halved nothing; the walk still halves [2, 4) once. One at or above the capacity counts."""
        after = {1.0: PASS, 1.5: PASS, 2.0: Judged(outcome="pass", runs=2), 4.0: Judged(outcome="fail", runs=2),
                 8.0: FAIL}
        assert next_batch([1.0, 2.0, 4.0, 8.0], after, mode="rate", repeats=1, refine=1) == [3.0]
        assert next_batch([1.0, 2.0, 4.0, 8.0], {**after, 3.0: FAIL}, mode="rate", repeats=1, refine=1) == []
        held = {1.0: PASS, 1.5: PASS, 2.0: Judged(outcome="fail", runs=2), 4.0: FAIL, 8.0: FAIL}
        assert next_batch([1.0, 2.0, 4.0, 8.0], held, mode="rate", repeats=1, refine=1) == []

    def test_a_boundary_point_takes_two_batches_after_the_grid_not_three(self) -> None:
        """The default proof sweep's verdicts (docs/sweep.md): 1 held, 2 and 4 undecided, 8 broke; on the
        rerun 2 stays undecided and 4 breaks. Reruns and the midpoint 1.5 share one batch (one AIPerf process
        fewer than a batch each), and the conclusion is the one the separate batches gave."""
        script = {1.0: ["pass"], 2.0: ["inconclusive", "inconclusive"], 4.0: ["inconclusive", "fail"],
                  8.0: ["fail"], 1.5: ["pass"]}
        judged: dict[float, Judged] = {}
        batches = []
        while values := next_batch([1.0, 2.0, 4.0, 8.0], judged, mode="rate", repeats=1, refine=1):
            for value in values:
                runs = judged[value].runs + 1 if value in judged else 1
                outcome = script[value][runs - 1]
                judged[value] = Judged(outcome=outcome, runs=runs, checks=FAIL.checks if outcome == "fail" else [])
            batches.append(values)
        assert batches == [[1.0, 2.0, 4.0, 8.0], [2.0, 4.0, 1.5]]
        c = conclude(judged, mode="rate", points=[1.0, 2.0, 4.0, 8.0])
        assert (c.outcome, c.capacity, c.lowest_failing) == ("bracketed", 1.5, 4.0)


class TestConclude:
    def test_bracketed_names_the_broken_slo(self) -> None:
        """A pass then a fail: capacity at the pass, the summary says which SLO broke and by how much."""
        c = conclude({3.0: PASS, 3.4: FAIL}, mode="rate")
        assert c.outcome == "bracketed"
        assert c.summary == ("capacity 3 req/s: 3 held every SLO, 3.4 broke p99 client latency "
                             "(p99 9100 ms > 8000 ms)")

    def test_an_undecided_point_inside_the_bracket_leaves_it_standing(self) -> None:
        """pass, inconclusive, fail: capacity at least the pass and below the fail, bracketed; the point between
        could only have narrowed it, and is named undecided. A point undecided below the highest pass leaves
        the capacity undecided (the capacity needs every lower point held)."""
        c = conclude({1.0: PASS, 2.0: UNDECIDED, 4.0: FAIL}, mode="rate", points=[1.0, 2.0, 4.0])
        assert (c.outcome, c.capacity, c.lowest_failing) == ("bracketed", 1.0, 4.0)
        assert c.undecided == ["2 req/s: too few requests"]
        assert c.summary.endswith("; between them undecided: 2 req/s: too few requests")
        c = conclude({1.0: UNDECIDED, 2.0: PASS, 4.0: FAIL}, mode="rate")
        assert c.outcome == "inconclusive" and c.capacity is None and c.undecided == ["1 req/s: too few requests"]

    def test_an_undecided_midpoint_leaves_the_bracket_standing(self) -> None:
        """Configured 1 passed and 2 failed; the refinement midpoint 1.5 could not decide (the time ran out
        before its rerun): still bracketed [1, 2), the midpoint said undecided."""
        judged = {1.0: PASS, 2.0: FAIL, 1.5: UNDECIDED}
        c = conclude(judged, mode="rate", points=[1.0, 2.0, 4.0])
        assert (c.outcome, c.capacity, c.lowest_failing) == ("bracketed", 1.0, 2.0)
        assert c.undecided == ["1.5 req/s: too few requests"]

    def test_points_not_reached_are_undecided(self) -> None:
        """Every point run passed but the time ran out: not all_passed, the rest is said undecided."""
        c = conclude({1.0: PASS}, mode="rate", not_run=[2.0])
        assert c.outcome == "inconclusive"
        assert c.undecided == ["2 req/s: not run (the sweep's time ran out)"]

    def test_the_lowest_point_failing_gives_no_capacity(self) -> None:
        """The first point breaks an SLO: none_passed, no capacity."""
        c = conclude({1.0: FAIL, 2.0: FAIL}, mode="concurrency")
        assert c.outcome == "none_passed" and c.capacity is None and c.unit == "concurrent requests"


def _gated_walk(points: list[float], script: dict[float, list[str]], *, gates: bool, repeats: int = 1,
                refine: int = 1, extend: int = 0) -> tuple[dict[float, Judged], list[list[float]]]:
    """The walk as `aqbench sweep` runs it: a batch per AIPerf process, its planned loads, then (with `gates`) its
    gated tail, each gated load decided in turn on every verdict so far (next_batch), a point's later run only
    after its earlier one in the batch ran. `script` gives each point's outcome run by run. Returns the verdicts
    and, per AIPerf process, the loads that ran."""
    judged: dict[float, Judged] = {}
    runs: dict[float, int] = {}
    processes: list[list[float]] = []

    def run(value: float) -> None:
        runs[value] = runs.get(value, 0) + 1
        outcome = script[value][min(runs[value], len(script[value])) - 1]
        judged[value] = Judged(outcome=outcome, runs=runs[value], checks=FAIL.checks if outcome == "fail" else [])

    while values := next_batch(points, judged, mode="rate", repeats=repeats, refine=refine, extend=extend):
        tail = gated_tail(values, runs, judged, mode="rate", repeats=repeats, refine=refine, points=points,
                          extend=extend) if gates else []
        ran: list[float] = []
        for value in values:
            run(value)
            ran.append(value)
        skipped: set[float] = set()
        for value in tail:
            if not gate_runs(points, judged, value, mode="rate", repeats=repeats, refine=refine,
                             earlier_skipped=value in skipped, extend=extend):
                skipped.add(value)
                continue
            run(value)
            ran.append(value)
        processes.append(ran)
    return judged, processes


class TestGateRuns:
    def test_a_gate_runs_what_the_search_runs_next_in_the_time_left(self) -> None:
        """8 undecided: its rerun runs, not a midpoint (no failure yet); not where the point's earlier gated run was
        skipped, nor where its planned time does not fit in --max-duration's time left."""
        judged = {1.0: PASS, 2.0: PASS, 4.0: PASS, 8.0: UNDECIDED}
        points = [1.0, 2.0, 4.0, 8.0]
        assert gate_runs(points, judged, 8.0, mode="rate", repeats=1, refine=1)
        assert not gate_runs(points, judged, 6.0, mode="rate", repeats=1, refine=1)
        assert not gate_runs(points, judged, 8.0, mode="rate", repeats=1, refine=1, earlier_skipped=True)
        assert not gate_runs(points, judged, 8.0, mode="rate", repeats=1, refine=1, need_s=10.0, left_s=9.9)
        assert gate_runs(points, judged, 8.0, mode="rate", repeats=1, refine=1, need_s=10.0, left_s=10.0)
        broken = {**judged, 8.0: Judged(outcome="fail", runs=2, checks=FAIL.checks)}
        assert gate_runs(points, broken, 6.0, mode="rate", repeats=1, refine=1)
        assert not gate_runs(points, broken, 8.0, mode="rate", repeats=1, refine=1)


class TestGatedTail:
    def test_the_tail_holds_reruns_then_each_midpoint_with_its_rerun(self) -> None:
        assert gated_tail([1.0, 2.0, 4.0, 8.0], {}, {}, mode="rate", repeats=1, refine=1) == [
            1.0, 2.0, 4.0, 8.0, 1.5, 1.5, 3.0, 3.0, 6.0, 6.0]
        # No midpoint without refine; no rerun for a point the batch already runs 1 + repeats times.
        assert gated_tail([1.0, 2.0, 1.0], {}, {}, mode="rate", repeats=1, refine=0) == [2.0]
        # Concurrency midpoints are whole: nothing lies between 1 and 2.
        assert gated_tail([1.0, 2.0, 4.0], {}, {}, mode="concurrency", repeats=1, refine=1) == [1.0, 2.0, 4.0, 3.0, 3.0]
        # A later batch: midpoints among every point known, none above an earlier failure or already run.
        judged = {1.0: PASS, 2.0: PASS, 4.0: UNDECIDED, 8.0: FAIL}
        assert gated_tail([4.0], {1.0: 1, 2.0: 1, 4.0: 1, 8.0: 1}, judged, mode="rate", repeats=1, refine=1) == [
            1.5, 1.5, 3.0, 3.0, 6.0, 6.0]

    def test_a_boundary_point_then_its_midpoint_run_in_one_aiperf_process(self) -> None:
        """8 undecided, then broken on its rerun; the midpoint 6 undecided, then held on its rerun. Without gates
        that took three AIPerf processes (grid; rerun with the midpoint beside it; the midpoint's rerun); with the
        tail, one, and the same bracket."""
        script = {1.0: ["pass"], 2.0: ["pass"], 4.0: ["pass"], 8.0: ["inconclusive", "fail"],
                  6.0: ["inconclusive", "pass"]}
        plain, before = _gated_walk([1.0, 2.0, 4.0, 8.0], script, gates=False)
        judged, processes = _gated_walk([1.0, 2.0, 4.0, 8.0], script, gates=True)
        assert before == [[1.0, 2.0, 4.0, 8.0], [8.0], [6.0], [6.0]]
        assert processes == [[1.0, 2.0, 4.0, 8.0, 8.0, 6.0, 6.0]]
        for verdicts in (plain, judged):
            c = conclude(verdicts, mode="rate", points=[1.0, 2.0, 4.0, 8.0])
            assert (c.outcome, c.capacity, c.lowest_failing) == ("bracketed", 6.0, 8.0)

    def test_a_midpoint_is_decided_after_the_reruns_before_it(self) -> None:
        """2 undecided then held, 4 broke at once: the midpoint is 3 (2's rerun decided first), not the 1.5 the
        batch-wide guess beside the reruns took; nothing else runs, and a sweep that needs nothing more runs
        nothing behind its gates."""
        script = {1.0: ["pass"], 2.0: ["inconclusive", "pass"], 4.0: ["fail"], 8.0: ["fail"], 3.0: ["fail"],
                  1.5: ["pass"]}
        judged, processes = _gated_walk([1.0, 2.0, 4.0, 8.0], script, gates=True)
        assert processes == [[1.0, 2.0, 4.0, 8.0, 2.0, 3.0]]
        c = conclude(judged, mode="rate", points=[1.0, 2.0, 4.0, 8.0])
        assert (c.outcome, c.capacity, c.lowest_failing) == ("bracketed", 2.0, 3.0)
        held = {v: ["pass"] for v in (1.0, 2.0, 4.0, 8.0)}
        assert _gated_walk([1.0, 2.0, 4.0, 8.0], held, gates=True)[1] == [[1.0, 2.0, 4.0, 8.0]]

    def test_seeded_knees_are_found_in_one_process_and_never_a_wider_bracket(self) -> None:
        """Seeded scripts over a grid (a knee anywhere, points near it undecided once or twice before their true
        outcome): the gated walk runs in one AIPerf process; it brackets wherever the plain walk does, around the
        knee, never wider. (It can be narrower: the plain walk's midpoint beside a rerun guesses the rerun stays
        undecided, and a midpoint left undecided below a passing rerun leaves the capacity below it.)"""
        rng = random.Random(7)
        grid = [1.0, 2.0, 4.0, 8.0, 16.0]
        fewer = narrower = 0
        for _ in range(300):
            knee = rng.uniform(0.5, 20.0)
            script: dict[float, list[str]] = {}
            for v in [*grid, 1.5, 3.0, 6.0, 12.0]:
                near = abs(v - knee) / knee < 0.3
                final = "pass" if v < knee else "fail"
                script[v] = (["inconclusive"] * rng.choice([1, 2]) + [final]) if near else [final]
            plain, before = _gated_walk(grid, script, gates=False)
            gated, after = _gated_walk(grid, script, gates=True)
            p, g = conclude(plain, mode="rate", points=grid), conclude(gated, mode="rate", points=grid)
            if g.outcome == "bracketed":
                assert g.capacity is not None and g.lowest_failing is not None
                assert g.capacity < knee < g.lowest_failing
            if p.outcome == "bracketed":
                assert p.capacity is not None and p.lowest_failing is not None
                assert g.outcome == "bracketed"
                assert g.lowest_failing - g.capacity <= p.lowest_failing - p.capacity
                narrower += g.lowest_failing - g.capacity < p.lowest_failing - p.capacity
            assert len(after) == 1
            fewer += len(before) > 1
        assert fewer > 250 and narrower > 0


class TestExtend:
    GRID = [1.0, 2.0, 4.0, 8.0]

    def test_doublings_follow_a_grid_that_never_failed(self) -> None:
        """Every point held, or the top could not decide after its rerun: the next doubling, one at a time, up to
        `extend`; none once a point failed, and none with extend 0."""
        held = {1.0: PASS, 2.0: PASS, 4.0: PASS, 8.0: PASS}
        assert next_batch(self.GRID, held, mode="rate", repeats=1, refine=1, extend=2) == [16.0]
        assert next_batch(self.GRID, {**held, 16.0: PASS}, mode="rate", repeats=1, refine=1, extend=2) == [32.0]
        assert next_batch(self.GRID, {**held, 16.0: PASS, 32.0: PASS}, mode="rate", repeats=1, refine=1,
                          extend=2) == []
        assert next_batch(self.GRID, held, mode="rate", repeats=1, refine=1, extend=0) == []
        top = {**held, 8.0: Judged(outcome="inconclusive", runs=2)}
        assert next_batch(self.GRID, top, mode="rate", repeats=1, refine=1, extend=2) == [16.0]
        # A doubling undecided is rerun like any point; where a pass needs two runs, both go in its first batch.
        assert next_batch(self.GRID, {**top, 16.0: UNDECIDED}, mode="rate", repeats=1, refine=1, extend=2) == [16.0]
        assert next_batch(self.GRID, held, mode="rate", repeats=1, refine=1, extend=2, runs=2) == [16.0, 16.0]
        broken = {**held, 8.0: FAIL}
        assert next_batch(self.GRID, broken, mode="rate", repeats=1, refine=1, extend=2) == [6.0]

    def test_a_doubling_that_breaks_is_no_midpoint(self) -> None:
        """8 undecided after its rerun, 16 broke: the one midpoint `refine` allows is taken below 8 (the doubling
        did not spend it); 8 held and 16 broke: the midpoint is 12."""
        top = {1.0: PASS, 2.0: PASS, 4.0: PASS, 8.0: Judged(outcome="inconclusive", runs=2), 16.0: FAIL}
        assert next_batch(self.GRID, top, mode="rate", repeats=1, refine=1, extend=2) == [6.0]
        assert next_batch(self.GRID, {**top, 6.0: PASS}, mode="rate", repeats=1, refine=1, extend=2) == []
        held = {1.0: PASS, 2.0: PASS, 4.0: PASS, 8.0: PASS, 16.0: FAIL}
        assert next_batch(self.GRID, held, mode="rate", repeats=1, refine=1, extend=2) == [12.0]

    def test_the_tail_carries_one_doubling_before_the_midpoints(self) -> None:
        assert gated_tail(self.GRID, {}, {}, mode="rate", repeats=1, refine=1, points=self.GRID, extend=2) == [
            1.0, 2.0, 4.0, 8.0, 16.0, 16.0, 1.5, 1.5, 3.0, 3.0, 6.0, 6.0, 12.0, 12.0]
        assert gated_tail(self.GRID, {}, {}, mode="rate", repeats=1, refine=0, points=self.GRID, extend=2) == [
            1.0, 2.0, 4.0, 8.0, 16.0, 16.0]
        # A later batch of the doubling itself carries the next one; none after a failure.
        runs = {v: 1 for v in self.GRID}
        held = dict.fromkeys(self.GRID, PASS)
        assert gated_tail([16.0], runs, held, mode="rate", repeats=0, refine=0, points=self.GRID, extend=2) == [32.0]
        assert gated_tail([16.0], runs, {**held, 8.0: FAIL}, mode="rate", repeats=0, refine=0, points=self.GRID,
                          extend=2) == []

    def test_the_default_proofs_boundary_is_bracketed_in_one_aiperf_process(self) -> None:
        """The default reference server's verdicts (bench/sweep_proofs.py): 1, 2 and 4 held, 8 undecided twice at
        the error-rate limit. Without doublings the sweep ends there, undecided; with them 16 breaks, the midpoint
        6 holds, and the capacity is bracketed [6, 16) with 8 named undecided between, all behind the grid's
        gates in its one AIPerf process."""
        script = {1.0: ["pass"], 2.0: ["pass"], 4.0: ["pass"], 8.0: ["inconclusive"], 16.0: ["fail"], 6.0: ["pass"]}
        plain, _ = _gated_walk(self.GRID, script, gates=True, extend=0)
        assert conclude(plain, mode="rate", points=self.GRID).outcome == "inconclusive"
        judged, processes = _gated_walk(self.GRID, script, gates=True, extend=2)
        assert processes == [[1.0, 2.0, 4.0, 8.0, 8.0, 16.0, 6.0]]
        c = conclude(judged, mode="rate", points=self.GRID)
        assert (c.outcome, c.capacity, c.lowest_failing) == ("bracketed", 6.0, 16.0)
        assert c.undecided and c.undecided[0].startswith("8 req/s")

    def test_seeded_knees_above_the_grid_are_found_within_one_step(self) -> None:
        """The stub server with its knee above the grid's top (8): doubling to 16 then halving brackets the knee
        within one halving of the doubled step, over seeds; with no doubling the sweep can only say all passed."""
        for seed, knee in enumerate([9.0, 11.0, 13.5, 15.0, 20.0, 27.0]):
            judged, batches = _batched(self.GRID, knee=knee, seed=seed, refine=1, extend=2)
            assert batches[:2] == [self.GRID, [16.0]]  # the first doubling right after the grid
            c = conclude(judged, mode="rate", points=self.GRID)
            assert c.outcome == "bracketed", (knee, c.summary)
            assert c.capacity is not None and c.lowest_failing is not None
            assert c.capacity < knee < c.lowest_failing
            assert c.lowest_failing - c.capacity <= knee  # one halving of the doubled step
            plain, _ = _batched(self.GRID, knee=knee, seed=seed, refine=1)
            assert conclude(plain, mode="rate", points=self.GRID).outcome == "all_passed"

    def test_a_doubling_the_time_did_not_fit_is_named(self) -> None:
        """The grid held but the doubling did not fit in --max-duration: still all_passed (every point run held),
        and the summary says the doubling was not run; with the top undecided, the capacity stays undecided and
        the doubling is listed with it. A doubling that did run is not named."""
        held = dict.fromkeys(self.GRID, PASS)
        c = conclude(held, mode="rate", points=self.GRID, unreached=[16.0])
        assert (c.outcome, c.capacity) == ("all_passed", 8.0)
        assert c.summary.endswith("every point held every SLO; the doubling to 16 did not fit in the sweep's time")
        top = {**held, 8.0: Judged(outcome="inconclusive", runs=2, checks=UNDECIDED.checks)}
        c = conclude(top, mode="rate", points=self.GRID, unreached=[16.0])
        assert c.outcome == "inconclusive" and c.capacity == 4.0
        assert c.undecided == ["8 req/s: too few requests", "16 req/s: not run (the sweep's time ran out)"]
        assert conclude({**held, 16.0: PASS}, mode="rate", points=self.GRID, unreached=[16.0]).summary.endswith(
            "add higher points to find where it breaks")
