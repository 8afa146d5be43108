"""ab.json and ab.md from an AbResult; writes only into the folder it is given."""

from __future__ import annotations

from pathlib import Path

import msgspec

from orchestrator.ab.sequential import describe
from orchestrator.ab.verdict import AbResult, decide
from orchestrator.compare.schema import Figure
from orchestrator.host_condition import describe_host

__all__ = ["render_markdown", "write_ab_report", "write_result"]


def _value(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    return f"{v:.1f} ms" if unit == "ms" else f"{v * 100:.1f} %"


def _cpus(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _interval(f: Figure) -> str:
    if f.lower is None or f.upper is None:
        return "-"
    return f"[{f.lower * 100:+.1f} %, {f.upper * 100:+.1f} %]" if f.relative else \
        f"[{f.lower * 100:+.1f}, {f.upper * 100:+.1f}] pt"


def render_markdown(r: AbResult) -> str:
    """ab.md: the verdict, the plan as journaled before the first block, the figures, the pairs."""
    p = r.plan
    out = [f"# aqbench ab: {r.outcome}", "", f"Journal `{r.journal}` ({r.run_id}, {r.status}). Exit code {r.exit_code}.",
           "", r.reason, ""]
    if p is not None:
        t = (f"the look's t (t = {p.t_quantile:.2f} at the last)" if p.critical_t else f"t = {p.t_quantile:.2f}") \
            if p.t_quantile is not None else "too few pairs to decide"
        out += ["## Plan (journaled before the first block)", "",
                f"- baseline (A): `{p.baseline}` at {p.baseline_url}; candidate (B): `{p.candidate}` at {p.candidate_url}",
                f"- order `{p.order}` (seed {p.seed}; pairs are blocks 1-2, 3-4, ...), {p.block_requests} requests a "
                f"block after {p.block_warmup} warmup, servers {'one at a time' if p.sequential else 'both running'}",
                f"- a figure regresses when the pairs' mean change less {t} standard errors exceeds the tolerance "
                f"(latency ±{p.latency_tolerance * 100:g} %, tail share ±{p.tail_tolerance * 100:g} pt), at "
                f"{p.confidence:.0%} two-sided",
                f"- early stop: a look after every pair from the third; {describe(p.boundary, p.critical_t, p.confidence)}"
                f"; stops at the first look where every figure that more pairs could decide is decided, after "
                f"{len(p.order) // 2} pairs at most ({len(p.order) * (p.block_requests + p.block_warmup)} requests)"
                if p.critical_t else "- no early stop: every planned pair runs, decided once at the fixed-size t", ""]
    out += [f"Stopped: {r.stop_reason}.", "", "## Figures", "",
            "| figure | baseline | candidate | change [interval] | tolerance | class | method |", "|---|---|---|---|---|---|---|"]
    for f in r.figures:
        tol = f"±{f.tolerance * 100:g} {'%' if f.relative else 'pt'}"
        note = f" ({f.note})" if f.note else ""
        out.append(f"| {f.name} | {_value(f.baseline, f.unit)} | {_value(f.candidate, f.unit)} | {_interval(f)} | "
                   f"{tol} | {f.change}{note} | {f.method} |")
    out += ["", "## Host while the blocks ran", "", f"- baseline (A) blocks: {describe_host(r.host_baseline)}",
            f"- candidate (B) blocks: {describe_host(r.host_candidate)}", "",
            "Outside CPU is what processes other than this run (its servers and AIPerf included) took. The pairs "
            "cancel a busier machine that lasts longer than a pair; a side whose blocks alone ran busier shows here.",
            "", "## Pairs (model-call p90 per block; outside CPU while it ran)", "",
            "| A block | B block | A p90 | B p90 | A outside CPU | B outside CPU |", "|---|---|---|---|---|---|"]
    out += [f"| {x.baseline_block + 1} | {x.candidate_block + 1} | {_value(x.baseline_p90_ms, 'ms')} | "
            f"{_value(x.candidate_p90_ms, 'ms')} | {_cpus(x.baseline_outside_cpus)} | "
            f"{_cpus(x.candidate_outside_cpus)} |" for x in r.pairs]
    return "\n".join(out) + "\n"


def write_ab_report(journal: Path, out: Path) -> list[Path]:
    """ab.json and ab.md rebuilt from an `ab` journal alone (`aqbench report`). Blocks (file reads, writes)."""
    return list(write_result(decide(journal), out))


def write_result(r: AbResult, out: Path) -> tuple[Path, Path]:
    """Write ab.json and ab.md into `out` (created). Blocks (file writes)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = (out / "ab.json", out / "ab.md")
    paths[0].write_bytes(msgspec.json.format(msgspec.json.encode(r), indent=1) + b"\n")
    paths[1].write_text(render_markdown(r), encoding="utf-8")
    return paths
