"""ab.json, ab.md and ab.html from an AbResult; writes only into the folder it is given."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
from markupsafe import Markup

from orchestrator.ab.plan import servers_text
from orchestrator.ab.power import describe_power
from orchestrator.ab.sequential import describe
from orchestrator.ab.verdict import AbResult, decide
from orchestrator.compare.render import CSS
from orchestrator.compare.schema import Figure
from orchestrator.reports.svg import line_chart
from orchestrator.reports.templating import render
from orchestrator.supervision.host_summary import describe_host

__all__ = ["render_html", "render_markdown", "write_ab_report", "write_result"]


def _value(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    return f"{v:.1f} ms" if unit == "ms" else f"{v * 100:.1f} %"


def _interval(f: Figure) -> str:
    if f.lower is None or f.upper is None:
        return "-"
    return f"[{f.lower * 100:+.1f} %, {f.upper * 100:+.1f} %]" if f.relative else \
        f"[{f.lower * 100:+.1f}, {f.upper * 100:+.1f}] pt"


_FIGURE_HEAD = ["figure", "baseline", "candidate", "change [interval]", "tolerance", "class", "method"]
_PAIR_HEAD = ["A block", "B block", "A p90", "B p90", "A outside CPU", "B outside CPU"]


def _plan_lines(r: AbResult) -> list[str]:
    """The plan as journaled before the first block, one sentence each (backticks mark names for ab.md)."""
    p = r.plan
    if p is None:
        return []
    t = (f"the look's t (t = {p.t_quantile:.2f} at the last)" if p.critical_t else f"t = {p.t_quantile:.2f}") \
        if p.t_quantile is not None else "too few pairs to decide"
    return [f"baseline (A): `{p.baseline}` at {p.baseline_url}; candidate (B): `{p.candidate}` at {p.candidate_url}",
            f"order `{p.order}` (seed {p.seed}; pairs are blocks 1-2, 3-4, ...), {p.block_requests} requests a "
            f"block after {p.block_warmup} warmup, servers {servers_text(p.sequential, not p.fresh_pairs)}",
            f"a figure regresses when the pairs' mean change less {t} standard errors exceeds the tolerance "
            f"(latency ±{p.latency_tolerance * 100:g} %, tail share ±{p.tail_tolerance * 100:g} pt), at "
            f"{p.confidence:.0%} two-sided",
            f"early stop: a look after every pair from the third; {describe(p.boundary, p.critical_t, p.confidence)}; "
            f"stops at the first look where a figure regressed or every figure that more pairs could decide is "
            f"decided, after {len(p.order) // 2} pairs at most ({len(p.order) * (p.block_requests + p.block_warmup)} "
            f"requests)" if p.critical_t else "no early stop: every planned pair runs, decided once at the fixed-size t"] \
        + ([f"instance allowance ±{p.instance_allowance * 100:g} % (latency), ±{p.instance_tail_allowance * 100:g} pt "
            "(tail shares): both servers run all session, so every pair compares the same two processes; every "
            "latency interval widens by it and a change within it is `differs, not attributable`"]
           if p.instance_allowance or p.instance_tail_allowance else []) \
        + ([f"power: {describe_power(p.power, p.block_requests)}", _noise_line(r)] if p.power else [])


def _noise_line(r: AbResult) -> str:
    """The pair noise the power statement assumed beside what this session's p50s showed."""
    assumed = r.plan.power.noise if r.plan is not None and r.plan.power is not None else 0.0
    if not r.observed_noise:
        return f"pair noise assumed {assumed:g}; this session's: not measured (fewer than 2 pairs)"
    seen = ", ".join(f"{k.split('.')[1].replace('_', ' ')} {v:.2f}" for k, v in r.observed_noise.items())
    worst = max(r.observed_noise.values())
    return (f"pair noise assumed {assumed:g}; this session's p50s: {seen}"
            + (" (noisier than assumed: the power statement was optimistic; pass --plan-noise "
               f"{math.ceil(worst * 10) / 10:g} next time)" if worst > assumed else " (within the assumption)"))


def _figure_rows(r: AbResult) -> list[list[str]]:
    rows = []
    for f in r.figures:
        note = f" ({f.note})" if f.note else ""
        rows.append([f.name, _value(f.baseline, f.unit), _value(f.candidate, f.unit), _interval(f),
                     f"±{f.tolerance * 100:g} {'%' if f.relative else 'pt'}", f"{f.change}{note}", f.method])
    return rows


def _pair_rows(r: AbResult) -> list[list[str]]:
    return [[str(x.baseline_block + 1), str(x.candidate_block + 1), _value(x.baseline_p90_ms, "ms"),
             _value(x.candidate_p90_ms, "ms"), _cpus(x.baseline_outside_cpus), _cpus(x.candidate_outside_cpus)]
            for x in r.pairs]


def _cpus(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def render_markdown(r: AbResult) -> str:
    """ab.md: the verdict, the plan as journaled before the first block, the figures, the pairs."""
    out = [f"# aqbench ab: {r.outcome}", "", f"Journal `{r.journal}` ({r.run_id}, {r.status}). Exit code {r.exit_code}.",
           "", r.reason, ""]
    if plan := _plan_lines(r):
        out += ["## Plan (journaled before the first block)", "", *(f"- {line}" for line in plan), ""]
    out += [f"Stopped: {r.stop_reason}.", "", "## Figures", "", "| " + " | ".join(_FIGURE_HEAD) + " |",
            "|---" * len(_FIGURE_HEAD) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in _figure_rows(r)]
    out += ["", "## Host while the blocks ran", "", f"- baseline (A) blocks: {describe_host(r.host_baseline)}",
            f"- candidate (B) blocks: {describe_host(r.host_candidate)}", "",
            "Outside CPU is what processes other than this run (its servers and AIPerf included) took. The pairs "
            "cancel a busier machine that lasts longer than a pair; a side whose blocks alone ran busier shows here."]
    out += ["", "## Pairs (model-call p90 per block; outside CPU while it ran)", "",
            "| " + " | ".join(_PAIR_HEAD) + " |", "|---" * len(_PAIR_HEAD) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in _pair_rows(r)]
    return "\n".join(out) + "\n"


def render_html(r: AbResult) -> str:
    """ab.html (templates/ab.html): what ab.md says, plus each pair's model-call p90 on one chart, A against B;
    self-contained (inline CSS and SVG, no scripts, no links out)."""
    series = [(side, [(float(i + 1), v) for i, x in enumerate(r.pairs)
                      if (v := (x.baseline_p90_ms if side == "baseline (A)" else x.candidate_p90_ms)) is not None])
              for side in ("baseline (A)", "candidate (B)")]
    chart = line_chart("ab-pairs", "model-call p90 per pair", series, x_label="pair", y_label="ms")
    # ab.md marks names with backticks; the page shows the names themselves.
    plan = [line.replace("`", "") for line in _plan_lines(r)]
    return render("ab.html", r=r, css=Markup(CSS), plan=plan, figure_head=_FIGURE_HEAD, figure_rows=_figure_rows(r),
                  pair_head=_PAIR_HEAD, pair_rows=_pair_rows(r), chart=Markup(chart))


def write_ab_report(journal: Path, out: Path) -> list[Path]:
    """ab.json, ab.md and ab.html rebuilt from an `ab` journal alone. Blocks (file reads, writes)."""
    return list(write_result(decide(journal), out))


def write_result(r: AbResult, out: Path) -> tuple[Path, Path, Path]:
    """Write ab.json, ab.md and ab.html into `out` (created). Blocks (file writes)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = (out / "ab.json", out / "ab.md", out / "ab.html")
    paths[0].write_bytes(msgspec.json.format(msgspec.json.encode(r), indent=1) + b"\n")
    paths[1].write_text(render_markdown(r), encoding="utf-8")
    paths[2].write_text(render_html(r), encoding="utf-8")
    return paths
