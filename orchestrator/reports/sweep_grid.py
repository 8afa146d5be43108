"""The report of a sweep over the server's own configuration (`aqbench sweep --server-grid`): each
configuration's capacity with its interval, per configuration and per replica, and a Pareto chart of throughput
per replica against p99 latency, folded from the sweeps' journals alone."""

from __future__ import annotations

import os
from collections.abc import Sequence
from html import escape
from pathlib import Path

import msgspec

from orchestrator.events import RunStarted
from orchestrator.reports.svg import scatter_chart
from orchestrator.reports.sweep import Capacity, fold_sweep
from orchestrator.spine.journal import iter_journal

__all__ = ["GridEntry", "ParetoPoint", "GridReport", "build_grid_report", "render_grid_markdown",
           "render_grid_html", "write_grid_report"]


class GridEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One configuration's sweep: its capacity, and the capacity per replica (None where not fitted or open)."""

    value: str
    run_id: str
    run_dir: str
    replicas: int | None
    capacity: Capacity | None
    per_replica: float | None = None
    per_replica_low: float | None = None
    per_replica_high: float | None = None


class ParetoPoint(msgspec.Struct, frozen=True, kw_only=True):
    """A judged load point of one configuration: goodput per replica against its client p99 latency."""

    value: str
    offered: float
    goodput_per_replica: float
    latency_p99_ms: float
    on_front: bool = False  # no other point has more goodput per replica at no higher latency


class GridReport(msgspec.Struct, frozen=True, kw_only=True):
    """grid.json: the [server] setting swept, each configuration's sweep, and the Pareto points."""

    key: str
    entries: list[GridEntry] = []
    pareto: list[ParetoPoint] = []
    unit: str = ""


def _per(v: float | None, replicas: int | None) -> float | None:
    return None if v is None or not replicas else round(v / replicas, 4)


def build_grid_report(runs: Sequence[tuple[str, Path]], key: str) -> GridReport:
    """Fold each configuration's journal (`runs`: its value and run folder). Blocks (file reads)."""
    entries, points, unit = [], [], ""
    for value, run_dir in runs:
        events = list(iter_journal(run_dir / "events.jsonl"))
        started = next((e for e in events if isinstance(e, RunStarted)), None)
        replicas = started.config.server.replicas if started and started.config else None
        report = fold_sweep(events)
        cap = report.capacity
        unit = unit or (cap.unit if cap else "")
        entries.append(GridEntry(value=value, run_id=report.run_id, run_dir=str(run_dir), replicas=replicas,
                                 capacity=cap, per_replica=_per(cap.value if cap else None, replicas),
                                 per_replica_low=_per(cap.low if cap else None, replicas),
                                 per_replica_high=_per(cap.high if cap else None, replicas)))
        for p in report.points:
            s = p.judged.stats
            if s.goodput_rps is not None and s.latency_p99_ms is not None and replicas:
                points.append(ParetoPoint(value=value, offered=p.offered, goodput_per_replica=round(
                    s.goodput_rps / replicas, 4), latency_p99_ms=s.latency_p99_ms))
    front = [msgspec.structs.replace(p, on_front=not any(
        q.goodput_per_replica >= p.goodput_per_replica and q.latency_p99_ms <= p.latency_p99_ms
        and (q.goodput_per_replica, q.latency_p99_ms) != (p.goodput_per_replica, p.latency_p99_ms)
        for q in points)) for p in points]
    return GridReport(key=key, entries=entries, pareto=front, unit=unit)


def _fmt(v: float | None) -> str:
    return "open" if v is None else f"{v:.3g}"


def _rows(report: GridReport) -> list[list[str]]:
    rows = []
    for e in report.entries:
        c = e.capacity
        rows.append([f"{report.key}={e.value}", e.run_id, _fmt(c.value if c else None),
                     f"[{_fmt(c.low if c else None)}, {_fmt(c.high if c else None)}]", c.binding if c else "-",
                     str(e.replicas or "-"), _fmt(e.per_replica),
                     f"[{_fmt(e.per_replica_low)}, {_fmt(e.per_replica_high)}]", c.outcome if c else "none"])
    return rows


_HEAD = ["configuration", "run", "capacity", "90% interval", "binding SLO", "replicas", "per replica",
         "per replica interval", "bracket"]


def render_grid_markdown(report: GridReport) -> str:
    lines = [f"# aqbench sweep over [server] {report.key}", "",
             f"Capacity ({report.unit}) per configuration and per replica, each with its 90 % interval:", "",
             "| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD),
             *("| " + " | ".join(r) + " |" for r in _rows(report)), "", "## Pareto front (goodput per replica "
             "against p99 latency)", "", "| configuration | offered | goodput/replica | p99 ms | on the front |",
             "|---|---|---|---|---|",
             *(f"| {report.key}={p.value} | {p.offered:g} | {p.goodput_per_replica:.3g} | {p.latency_p99_ms:.0f} | "
               f"{'yes' if p.on_front else ''} |" for p in report.pareto), ""]
    return "\n".join(lines)


def _pareto_chart(report: GridReport) -> str:
    series = [(f"{report.key}={v}", [(p.goodput_per_replica, p.latency_p99_ms) for p in report.pareto
                                     if p.value == v]) for v in dict.fromkeys(e.value for e in report.entries)]
    series.append(("Pareto front", [(p.goodput_per_replica, p.latency_p99_ms) for p in report.pareto if p.on_front]))
    return scatter_chart("pareto", "Goodput per replica against p99 latency (lower right is better)", series,
                         x_label="goodput per replica (req/s)", y_label="p99 ms")


def render_grid_html(report: GridReport) -> str:
    table = ("<table><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in _HEAD) + "</tr></thead><tbody>"
             + "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in _rows(report))
             + "</tbody></table>")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>aqbench sweep grid</title>"
            "<style>body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;padding:0 12px}"
            "table{border-collapse:collapse}th,td{border:1px solid #d0d0d0;padding:3px 8px}"
            "svg{max-width:100%;height:auto}</style></head><body>"
            f"<h1>aqbench sweep over [server] {escape(report.key)}</h1>{table}"
            + _pareto_chart(report) + "</body></html>")


def write_grid_report(report: GridReport, out: Path) -> list[Path]:
    """grid.json, grid.md and grid.html into `out`. Blocks."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "grid.json", out / "grid.md", out / "grid.html"]
    for path, data in ((paths[0], msgspec.json.format(msgspec.json.encode(report, order="sorted"), indent=1) + b"\n"),
                       (paths[1], render_grid_markdown(report).encode()), (paths[2], render_grid_html(report).encode())):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return paths
