"""Which load point a sweep tries next, and the capacity its judged points give: pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from orchestrator.events import SloCheck, SweepConcluded

__all__ = ["Judged", "extensions", "next_point", "next_batch", "gated_tail", "gate_runs", "conclude", "unit_of"]

_NAMES = {"p99_latency": "p99 client latency", "p90_latency": "p90 client latency",
          "p99_model_call": "p99 model_call_ms", "error_rate": "error rate", "answers": "answers",
          "complete_outputs": "complete outputs", "evidence": "evidence"}


class Judged(msgspec.Struct, frozen=True, kw_only=True):
    """A point's latest verdict and how many runs it took."""

    outcome: str
    runs: int = 1
    checks: list[SloCheck] = []


def unit_of(mode: str) -> str:
    return "req/s" if mode == "rate" else "concurrent requests"


def _fmt(v: float) -> str:
    return f"{v:g}"


def _midpoint(low: float, high: float, mode: str) -> float | None:
    """Halfway between, as a whole number in concurrency mode; None when nothing lies strictly between."""
    mid = (low + high) / 2.0
    if mode == "concurrency":
        mid = float(int(mid))
    if not low < mid < high:
        return None
    return round(mid, 6)


def extensions(points: Sequence[float], extend: int) -> list[float]:
    """The points tried above the configured grid when none of it failed: its highest doubled, `extend` times."""
    top = max(points, default=0.0)
    return [top * 2.0 ** k for k in range(1, extend + 1)] if top > 0 else []


def _next_extension(points: Sequence[float], judged: Mapping[float, Judged], extend: int) -> float | None:
    """The next doubling above the grid not yet judged (each only after the one below it), or None."""
    return next((v for v in extensions(points, extend) if v not in judged), None)


# Strategy (kept small, and ours because AIPerf's search judges only its own aggregates, not answers or the server's
# model_call_ms): walk the configured points upwards and stop at the first that fails, since capacity is taken as
# monotone in load; a point that could not decide is rerun (its evidence pooled) up to `repeats` times; where every
# configured point was run and none failed, double the highest point up to `extend` times, so that a server whose
# capacity lies at or above the grid's top is still bracketed; then halve the bracket between the highest pass and the
# lowest fail `refine` times.
def next_point(points: Sequence[float], judged: Mapping[float, Judged], *, mode: str, repeats: int,
               refine: int) -> float | None:
    """The offered load to run next (a point again to pool more evidence), or None when the sweep is done."""
    for value in sorted(judged):  # rerun an undecided point first, so the walk goes on from evidence
        j = judged[value]
        if j.outcome == "inconclusive" and j.runs <= repeats:
            return value
    failing = [v for v, j in judged.items() if j.outcome == "fail"]
    lowest_fail = min(failing) if failing else None
    for value in points:
        if lowest_fail is not None and value >= lowest_fail:
            break
        if value not in judged:
            return value
    if lowest_fail is None:
        return None
    passing = _capacity(judged)
    tried = [v for v in judged if v not in points]
    if passing is None or len(tried) >= refine:
        return None
    return _midpoint(passing, lowest_fail, mode)


def next_batch(points: Sequence[float], judged: Mapping[float, Judged], *, mode: str, repeats: int,
               refine: int, runs: int = 1, extend: int = 0) -> list[float]:
    """The offered loads to run next in one AIPerf process (one start-up for them all); empty when the sweep is
    done. Every undecided point below the lowest failure that may still be rerun, ascending, and after them the
    midpoint those points' verdicts so far give (see below); else every configured point not yet run below the
    lowest failure (a point above a failure in the same batch runs too: it is judged and reported, though the
    capacity is already below it), `runs` times each (all first runs, then all second runs, ...); else, where no
    point failed, the next of `extend` doublings above the grid (`runs` times too); else the next midpoint.

    `runs` > 1 where the plan said before the sweep that one run's requests cannot pass (a pass needs more than
    a point has): then every point that does not fail is rerun anyway, so its rerun joins its first batch
    instead of costing an AIPerf process of its own. A point that fails has its extra runs pooled all the same.

    The midpoint beside the reruns: halving below the lowest point above the capacity that did not pass takes
    an undecided point as not passed, so it is the midpoint the reruns lead to unless one of them then passes
    (a point undecided once is most often undecided or failing again). Run with them, it saves the AIPerf
    process (its start-up, ~10 s) a midpoint alone would cost. Should a rerun pass above it, it is judged and
    reported like any point below the capacity, and it does not count against `refine` (a midpoint counts
    only at or above the capacity), so the walk still halves the bracket the reruns leave."""
    failing = [v for v, j in judged.items() if j.outcome == "fail"]
    lowest_fail = min(failing) if failing else None

    def below(v: float) -> bool:
        return lowest_fail is None or v < lowest_fail

    reruns = [v for v in sorted(judged) if judged[v].outcome == "inconclusive" and judged[v].runs <= repeats
              and below(v)]
    fresh = [v for v in points if v not in judged and below(v)]
    if reruns:
        mid = None if fresh else _next_midpoint(points, judged, lowest_fail, mode=mode, refine=refine,
                                                extend=extend)
        # Last, so that a sweep short of time (fit keeps the leading loads) drops the midpoint before a rerun.
        return reruns + ([mid] if mid is not None and mid not in points else [])
    if fresh:
        return fresh * max(1, min(runs, 1 + repeats))
    # Nothing failed on the whole grid: its top held or could not decide, and without a failure above there is no
    # bracket. The next doubling above it (a point undecided at the top most often sits at the boundary, so the
    # doubling is likely to break an SLO clearly, and the midpoint below the undecided point then narrows).
    ext = _next_extension(points, judged, extend) if lowest_fail is None else None
    if ext is not None:
        return [ext] * max(1, min(runs, 1 + repeats))
    mid = _next_midpoint(points, judged, lowest_fail, mode=mode, refine=refine, extend=extend)
    return [] if mid is None else [mid]


def gated_tail(values: Sequence[float], runs: Mapping[float, int], judged: Mapping[float, Judged], *, mode: str,
               repeats: int, refine: int, points: Sequence[float] = (), extend: int = 0) -> list[float]:
    """The loads a batch of `values` carries behind gates, after them, in the order they are decided: every
    run `next_batch` could ask once the batch's verdicts are in, so that it needs no AIPerf process of its own.
    `runs` counts each point's runs before the batch (0 or absent: none); `judged` holds the earlier batches'
    verdicts.

    First one rerun of each point of the batch that may still be rerun (ascending). Then, where no point failed
    earlier and `extend` allows, the next doubling above the configured `points` whose point below is known (the
    batch's among them), with its `repeats` reruns; one doubling only, a deeper one runs in a batch of its own.
    Then, where `refine` allows
    a midpoint, each midpoint between two neighbours among the points known (the batch's among them) that is not
    known yet and could still halve a bracket (its lower neighbour not at or above an earlier failure), each
    followed by its `repeats` reruns. Each gate asks `next_batch` on everything judged by then, so a midpoint
    runs only once the reruns before it leave it the next run. Deeper midpoints (`refine` > 1) are not
    carried: the search runs them in a batch of their own."""
    counts = {v: values.count(v) for v in dict.fromkeys(values)}
    tail = [v for v in sorted(counts) if runs.get(v, 0) + counts[v] <= repeats]
    failing = [v for v, j in judged.items() if j.outcome == "fail"]
    lowest_fail = min(failing) if failing else None
    known = sorted({*runs, *values})
    doublings = extensions(points, extend)
    if lowest_fail is None:
        below = [max(points, default=0.0), *doublings]
        ext = next((v for v, under in zip(doublings, below, strict=False)
                    if v not in runs and v not in counts and under in known), None)
        if ext is not None:
            tail += [ext] * (1 + repeats)
            known = sorted({*known, ext})
    if refine < 1:
        return tail
    for low, high in zip(known, known[1:], strict=False):
        mid = _midpoint(low, high, mode)
        if mid is None or mid in runs or (lowest_fail is not None and low >= lowest_fail):
            continue
        tail += [mid] * (1 + repeats)
    return tail


def gate_runs(points: Sequence[float], judged: Mapping[float, Judged], value: float, *, mode: str, repeats: int,
              refine: int, earlier_skipped: bool = False, need_s: float = 0.0,
              left_s: float = float("inf"), extend: int = 0) -> bool:
    """Whether a gated run of `value` runs, decided on every verdict so far (`judged`, this batch's runs counted):
    where the search would run that point next (`next_batch`), none of the point's earlier gated runs in the batch
    was skipped (then this one is not its next run), and its planned time `need_s` fits in `left_s`."""
    if earlier_skipped or need_s > left_s:
        return False
    return value in next_batch(points, judged, mode=mode, repeats=repeats, refine=refine, extend=extend)


def _next_midpoint(points: Sequence[float], judged: Mapping[float, Judged], lowest_fail: float | None, *, mode: str,
                   refine: int, extend: int = 0) -> float | None:
    """The next refinement midpoint, or None: no bracket yet, `refine` midpoints already tried at or above the
    capacity, or nothing left between."""
    passing = _capacity(judged)
    # A midpoint below the capacity (a higher point passed after it was planned) halved no bracket; a doubling
    # above the grid is no midpoint (nothing judged lies between two doublings, so none equals a midpoint).
    grid = {*points, *extensions(points, extend)}
    tried = [v for v in judged if v not in grid and (passing is None or v >= passing)]
    if lowest_fail is None or passing is None or len(tried) >= refine:
        return None
    # Halve below the lowest point above the capacity that did not pass: a point left undecided after its
    # reruns sits at the boundary (its share beyond the limit about the limit itself), so the capacity is
    # found below it, not between it and the failure above.
    upper = min(v for v, j in judged.items() if v > passing and j.outcome != "pass")
    mid = _midpoint(passing, upper, mode)
    return None if mid is None or mid in judged else mid


def _capacity(judged: Mapping[float, Judged]) -> float | None:
    """The highest point that passed with every lower point passing too."""
    capacity = None
    for value in sorted(judged):
        if judged[value].outcome != "pass":
            break
        capacity = value
    return capacity


def _broken(checks: Sequence[SloCheck]) -> str:
    parts = [f"{_NAMES.get(c.slo, c.slo)} ({c.reason})" for c in checks if c.outcome == "fail"]
    return ", ".join(parts) or "an SLO"


def conclude(judged: Mapping[float, Judged], *, mode: str, not_run: Sequence[float] = (),
             points: Sequence[float] | None = None, unreached: Sequence[float] = ()) -> SweepConcluded:
    """The capacity the judged points give, bracketed where a pass and the next higher fail are adjacent
    among the points run; `not_run` are configured points the sweep never reached (its time ran out).

    A point that could not decide between the capacity (the highest pass, every lower point passing) and the
    lowest failure leaves the bracket standing: it would only have narrowed it. It is listed as undecided, and
    the summary names it. A point undecided below the capacity, or not run, leaves the capacity undecided.
    `points` (the configured points) is kept for callers; every point is judged alike. `unreached`: doublings
    above the grid the search asked for that the sweep's time did not fit: named where the capacity stays
    undecided, and beside an all-passed grid (which stands: every point run held)."""
    unit = unit_of(mode)
    capacity = _capacity(judged)
    failing = sorted(v for v, j in judged.items() if j.outcome == "fail")
    lowest_fail = failing[0] if failing else None

    def narrowing(v: float) -> bool:
        return capacity is not None and lowest_fail is not None and capacity < v < lowest_fail

    below = [(v, j) for v, j in sorted(judged.items()) if j.outcome == "inconclusive"
             and (lowest_fail is None or v < lowest_fail)]
    reasons = {v: f"{_fmt(v)} {unit}: " + "; ".join(c.reason for c in j.checks if c.outcome == "inconclusive")
               for v, j in below}
    inside = [reasons[v] for v, _ in below if narrowing(v)]
    undecided = [reasons[v] for v, _ in below if not narrowing(v)]
    undecided += [f"{_fmt(v)} {unit}: not run (the sweep's time ran out)" for v in not_run]
    left = [v for v in unreached if v not in judged]
    unreached_said = [f"{_fmt(v)} {unit}: not run (the sweep's time ran out)" for v in left]
    broken = [c for c in judged[lowest_fail].checks if c.outcome == "fail"] if lowest_fail is not None else []
    if not judged:
        return SweepConcluded(outcome="inconclusive", mode=mode, unit=unit, undecided=undecided,  # type: ignore[arg-type]
                              summary="no load point was judged")
    if lowest_fail is not None and lowest_fail == min(judged):
        return SweepConcluded(outcome="none_passed", mode=mode, unit=unit, lowest_failing=lowest_fail,  # type: ignore[arg-type]
                              broken=broken, undecided=undecided, summary=(
                                  f"no capacity: the lowest point, {_fmt(lowest_fail)} {unit}, broke "
                                  f"{_broken(broken)}"))
    held = f"{_fmt(capacity)} held every SLO" if capacity is not None else "no point held every SLO"
    if lowest_fail is not None and not undecided and capacity is not None:
        narrowed = ("; between them undecided: " + " | ".join(inside)) if inside else ""
        return SweepConcluded(outcome="bracketed", mode=mode, unit=unit, capacity=capacity,  # type: ignore[arg-type]
                              highest_passing=capacity, lowest_failing=lowest_fail, broken=broken, undecided=inside,
                              summary=(f"capacity {_fmt(capacity)} {unit}: {held}, {_fmt(lowest_fail)} broke "
                                       f"{_broken(broken)}{narrowed}"))
    if lowest_fail is None and not undecided:
        return SweepConcluded(outcome="all_passed", mode=mode, unit=unit, capacity=capacity,  # type: ignore[arg-type]
                              highest_passing=capacity, summary=(
                                  f"capacity at least {_fmt(capacity or 0)} {unit}: every point held every SLO; "
                                  + (f"the doubling to {_fmt(left[0])} did not fit in the sweep's time"
                                     if left else "add higher points to find where it breaks")))
    undecided = inside + undecided + (unreached_said if lowest_fail is None else [])
    above = f", below {_fmt(lowest_fail)} ({_fmt(lowest_fail)} broke {_broken(broken)})" if lowest_fail else ""
    return SweepConcluded(outcome="inconclusive", mode=mode, unit=unit, capacity=capacity,  # type: ignore[arg-type]
                          highest_passing=capacity, lowest_failing=lowest_fail, broken=broken, undecided=undecided,
                          summary=(f"capacity undecided: {held}{above}; undecided: " + " | ".join(undecided)))
