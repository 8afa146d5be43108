"""The paired non-inferiority figures of a report row as (field, value) rows, shared by Markdown and HTML.

Pure text from a NoninferiorityResult; numbers in points, two decimals, never rounded before a gate.
"""

from __future__ import annotations

from orchestrator.events import NoninferiorityResult

__all__ = ["NONINFERIORITY_HEAD", "noninferiority_rows"]

NONINFERIORITY_HEAD = ["Against the reference", "Value"]


def _pts(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def noninferiority_rows(r: NoninferiorityResult) -> list[list[str]]:
    """Outcome, gate and its source, both sides' scores, R with its bounds, the counts, citations, reason."""
    rows = [["outcome", r.outcome]]
    if r.method:
        rows += [
            ["gate", f"{r.gate_used}: margin {_pts(r.margin)} points ({'sampled' if r.sampled else 'greedy'}, "
                     f"{'quantized' if r.quantized else 'full precision'} candidate)"],
            ["margin source", r.margin_source],
            ["reference score", f"{_pts(r.reference_score)} points ({r.reference_precision or 'precision not stated'})"],
            ["model score", f"{_pts(r.candidate_score)} points ({r.candidate_precision or 'precision not stated'})"],
            ["regression R", f"{_pts(r.estimate)} points, one-sided 95% bounds [{_pts(r.lower)}, {_pts(r.upper)}]"],
            ["pairs", f"n = {r.n} over arms {', '.join(r.arms)}" + (f", {r.seeds} seeds" if r.sampled else "")],
        ]
        if r.b is not None:
            rows.append(["discordant", f"b = {r.b} only the reference right, c = {r.c} only the model right "
                                       f"(both right {r.both_right}, both wrong {r.both_wrong})"])
        rows += [
            ["out of capacity", str(r.out_of_capacity) + (f" ({'; '.join(r.capacity_messages)})"
                                                          if r.capacity_messages else "")],
            ["counted wrong", f"{r.candidate_failures} unanswered, {r.candidate_incomplete} incomplete"],
            ["method", r.method + (f", cutoff {r.cutoff}" if r.cutoff is not None else "")],
        ]
        if r.reference_unanswered:
            rows.append(["reference unanswered", str(r.reference_unanswered)])
        if r.fail_from_b is not None:  # journals before issue 30 do not carry it
            rows.append(["detectable regression", f"{_pts(r.detectable_regression)} points observed (b >= "
                         f"{r.fail_from_b} of {r.n} with c = 0) fails; a true regression of "
                         f"{_pts(r.detectable_power_regression)} points fails with probability 0.8"])
        if r.outcome == "inconclusive":
            rows.append(["items needed", "not within reach" if r.items_needed is None else str(r.items_needed)])
    rows += [["cites", f"{c.file}@{c.revision or 'working tree'} {c.entry}"] for c in r.citations]
    if r.reason:
        rows.append(["reason", r.reason])
    return rows
