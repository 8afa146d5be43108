"""`aqbench compare` of two sweeps: the change in capacity, decided only where the two brackets allow it.
Pure over the two journals' folds; the files are written by `write_sweep_comparison`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import msgspec

from orchestrator.events import AnyEvent, DatasetPhase, PhaseFinished, RunStarted
from orchestrator.reports.sweep import SweepReport, fold_sweep
from orchestrator.spine.journal import TornLine, iter_journal

__all__ = ["SweepSide", "CapacityChange", "is_sweep", "load_side", "compare_sweeps", "render_markdown",
           "write_sweep_comparison"]

Change = Literal["regressed", "improved", "unchanged", "inconclusive", "not_comparable"]


class SweepSide(msgspec.Struct, frozen=True, kw_only=True):
    """One sweep as the comparison reads it: its bracket, and what makes two capacities comparable."""

    journal: str
    run_id: str
    status: str
    mode: str
    unit: str
    slo: dict[str, float]
    dataset: str
    outcome: str  # the sweep's capacity outcome (bracketed, all_passed, ...), or "none" when it never concluded
    highest_passing: float | None
    lowest_failing: float | None
    summary: str
    torn_line: int | None = None
    # The capacity fitted near the boundary with its interval (None: a sweep before the fit, or an open end).
    value: float | None = None
    low: float | None = None
    high: float | None = None
    level: float | None = None


class CapacityChange(msgspec.Struct, frozen=True, kw_only=True):
    """compare.json of two sweeps: the change in capacity and why it could or could not be decided."""

    kind: str = "sweep"
    baseline: SweepSide
    candidate: SweepSide
    change: Change
    reason: str
    exit_code: int
    # The capacity's possible change, candidate minus baseline: [low, high] from the two brackets (None: open).
    delta_low: float | None = None
    delta_high: float | None = None


def is_sweep(journal: Path) -> bool:
    """Whether the journal's first event says `aqbench sweep` wrote it."""
    for ev in iter_journal(journal):
        return isinstance(ev, RunStarted) and ev.command == "sweep"
    return False


def _dataset(events: Iterable[AnyEvent]) -> str:
    for ev in events:
        if isinstance(ev, PhaseFinished) and isinstance(ev.detail, DatasetPhase):
            return ev.detail.identity or ev.detail.name
    return ""


def load_side(journal: Path) -> SweepSide:
    """Fold one sweep's journal (Blocks: file reads)."""
    torn: list[TornLine] = []
    events = list(iter_journal(journal, on_torn=torn.append))
    report: SweepReport = fold_sweep(events, torn[0] if torn else None)
    cap = report.capacity
    return SweepSide(journal=str(journal), run_id=report.run_id, status=report.status, mode=report.mode,
                     unit=cap.unit if cap else "", slo=dict(report.slo), dataset=_dataset(events),
                     outcome=cap.outcome if cap else "none", highest_passing=cap.highest_passing if cap else None,
                     lowest_failing=cap.lowest_failing if cap else None, summary=cap.summary if cap else report.reason,
                     torn_line=report.torn_line, value=cap.value if cap and cap.level is not None else None,
                     low=cap.low if cap else None, high=cap.high if cap else None,
                     level=cap.level if cap else None)


def _interval(s: SweepSide) -> str:
    low = f"{s.low:.3g}" if s.low is not None else "0"
    high = f"{s.high:.3g}" if s.high is not None else "unbounded"
    return f"{s.value:.3g} [{low}, {high}]"


def _bracket(s: SweepSide) -> str:
    low = f"{s.highest_passing:g}" if s.highest_passing is not None else "0"
    high = f"{s.lowest_failing:g}" if s.lowest_failing is not None else "unbounded"
    return f"[{low}, {high})"


def _refusal(base: SweepSide, cand: SweepSide) -> str:
    """Why the two capacities measure different things ("" when they do not)."""
    if base.outcome == "none" or cand.outcome == "none":
        side = "baseline" if base.outcome == "none" else "candidate"
        return f"the {side} sweep concluded no capacity ({(base if side == 'baseline' else cand).summary})"
    if base.mode != cand.mode:
        return f"modes differ: baseline {base.mode}, candidate {cand.mode}"
    if base.slo != cand.slo:
        diff = sorted(k for k in set(base.slo) | set(cand.slo) if base.slo.get(k) != cand.slo.get(k))
        return "the SLOs differ (" + ", ".join(f"{k}: {base.slo.get(k)} vs {cand.slo.get(k)}" for k in diff) + ")"
    if base.dataset != cand.dataset:
        return f"datasets differ: baseline {base.dataset or '?'}, candidate {cand.dataset or '?'}"
    return ""


def compare_sweeps(base: SweepSide, cand: SweepSide, *, strict: bool = False) -> CapacityChange:
    """The change in capacity from `base` to `cand` (exit 0 none regressed, 1 regressed or, with `strict`,
    inconclusive, 2 not comparable).

    A sweep's capacity is known only as a bracket: at least its highest passing point (every lower point held too),
    below its lowest failing point (capacity taken as monotone in load). A missing end is open (0 below, unbounded
    above). The candidate's capacity is surely lower when its bracket lies wholly below the baseline's (it broke an
    SLO at a load the baseline held), surely higher when wholly above, and unchanged within the brackets' width when
    both brackets are the same. Anything else is inconclusive, saying which points would decide it. Sweeps with
    different modes, SLOs or datasets measure different capacities and are refused. Where both sweeps fitted their
    capacity with an interval, the intervals decide instead: regressed only where the candidate's lies wholly below
    the baseline's, improved only wholly above.
    """
    refused = _refusal(base, cand)
    if refused:
        return CapacityChange(baseline=base, candidate=cand, change="not_comparable", reason=refused, exit_code=2)
    unit = base.unit
    b_lo, b_hi = base.highest_passing or 0.0, base.lowest_failing
    c_lo, c_hi = cand.highest_passing or 0.0, cand.lowest_failing
    # Capacity in [lo, hi): the change lies in (c_lo - b_hi, c_hi - b_lo).
    d_lo = c_lo - b_hi if b_hi is not None else None
    d_hi = c_hi - b_lo if c_hi is not None else None
    brackets = f"baseline {_bracket(base)}, candidate {_bracket(cand)} {unit}"
    change: Change
    if c_hi is not None and c_hi <= b_lo:
        change = "regressed"
        reason = (f"capacity fell: the candidate broke an SLO at {c_hi:g} {unit}, a load the baseline held "
                  f"({brackets})")
    elif b_hi is not None and b_hi <= c_lo:
        change = "improved"
        reason = (f"capacity rose: the candidate held every SLO at {c_lo:g} {unit}, a load the baseline broke "
                  f"({brackets})")
    elif (b_lo, b_hi) == (c_lo, c_hi) and b_hi is not None:
        change = "unchanged"
        reason = (f"same bracket {_bracket(base)} {unit}: any change is smaller than its width "
                  f"({b_hi - b_lo:g} {unit})")
    else:
        change = "inconclusive"
        reason = (f"the brackets overlap ({brackets}): points between them, or bracketed sweeps, would decide")
    if base.value is not None and cand.value is not None:  # both fitted: the intervals decide
        change, reason, d_lo, d_hi = _by_intervals(base, cand, change, unit)
    code = 1 if change == "regressed" or (strict and change == "inconclusive") else 0
    return CapacityChange(baseline=base, candidate=cand, change=change, reason=reason, exit_code=code,
                          delta_low=d_lo, delta_high=d_hi)


def _by_intervals(base: SweepSide, cand: SweepSide, by_bracket: Change, unit: str
                  ) -> tuple[Change, str, float | None, float | None]:
    """The change decided on the two fitted intervals: regressed only where the candidate's lies wholly below the
    baseline's, improved only wholly above; unchanged only where the brackets also are the same."""
    b_lo, c_lo = base.low or 0.0, cand.low or 0.0
    d_lo = c_lo - base.high if base.high is not None else None
    d_hi = cand.high - b_lo if cand.high is not None else None
    both = f"baseline {_interval(base)}, candidate {_interval(cand)} {unit}, {base.level or 0.9:.0%} intervals"
    if cand.high is not None and cand.high < b_lo:
        return "regressed", f"capacity fell: the candidate's interval lies wholly below the baseline's ({both})", \
            d_lo, d_hi
    if base.high is not None and base.high < c_lo:
        return "improved", f"capacity rose: the candidate's interval lies wholly above the baseline's ({both})", \
            d_lo, d_hi
    if by_bracket == "unchanged":
        return "unchanged", f"the intervals overlap and the brackets are the same ({both})", d_lo, d_hi
    return "inconclusive", (f"the intervals overlap ({both}): a change smaller than their width cannot be told; "
                            "narrower intervals (a higher --precision reached) would decide"), d_lo, d_hi


def render_markdown(c: CapacityChange) -> str:
    def row(name: str, s: SweepSide) -> str:
        fitted = _interval(s) if s.value is not None else "-"
        return f"| {name} | {s.run_id} | {s.outcome} | {_bracket(s)} | {fitted} | {s.summary.replace('|', '/')} |"

    low = "-inf" if c.delta_low is None else f"{c.delta_low:+g}"
    high = "+inf" if c.delta_high is None else f"{c.delta_high:+g}"
    lines = ["# aqbench compare: two sweeps", "", f"**{c.change}**: {c.reason}", ""]
    if c.change != "not_comparable":
        lines += [f"The capacity's change lies in ({low}, {high}) {c.baseline.unit}.", ""]
    lines += ["| side | run | outcome | capacity bracket | capacity, interval | summary |", "|---|---|---|---|---|---|",
              row("baseline", c.baseline), row("candidate", c.candidate), ""]
    return "\n".join(lines)


def write_sweep_comparison(c: CapacityChange, out: Path) -> list[Path]:
    """compare.json and compare.md into `out`. Blocks."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "compare.json", out / "compare.md"]
    for path, data in ((paths[0], msgspec.json.format(msgspec.json.encode(c, order="sorted"), indent=1) + b"\n"),
                       (paths[1], render_markdown(c).encode())):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return paths
