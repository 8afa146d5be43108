"""The report of a sweep over the server's own configuration (`aqbench sweep --server-grid`): each
configuration's capacity with its interval, per configuration and per replica, the host while each ran, and a
Pareto chart of throughput per replica against p99 latency, folded from the sweeps' journals alone."""

from __future__ import annotations

import os
from collections.abc import Sequence
from html import escape
from pathlib import Path

import msgspec

from orchestrator.base.figures import figure
from orchestrator.events import HostSampled, RunStarted
from orchestrator.reports.svg import scatter_chart
from orchestrator.reports.sweep import SLO_NAMES, Capacity, fold_sweep
from orchestrator.spine.journal import iter_journal
from orchestrator.supervision.host_summary import HostCondition, summarize_host

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
    host: HostCondition | None = None  # the host while this configuration's sweep ran (None: not sampled)


class ParetoPoint(msgspec.Struct, frozen=True, kw_only=True):
    """A judged load point of one configuration: goodput per replica against its client p99 latency."""

    value: str
    offered: float
    goodput_per_replica: float
    latency_p99_ms: float
    on_front: bool = False  # held its SLOs, and no other such point has more goodput per replica at no higher latency
    outcome: str = ""  # the point's verdict: one that broke an SLO is drawn but never on the front


class GridReport(msgspec.Struct, frozen=True, kw_only=True):
    """grid.json: the [server] setting swept, each configuration's sweep, and the Pareto points."""

    key: str
    entries: list[GridEntry] = []
    pareto: list[ParetoPoint] = []
    unit: str = ""
    host_note: str = ""  # set where the configurations ran with unequal CPU left to them (UNEVEN apart or more)


# The CPU the host left a configuration's sweep (its CPUs less what other processes took, on average), this many
# times more for one configuration than another, confounds their capacities: a CPU-bound server's scales with it.
UNEVEN = 1.5


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
                                 per_replica_high=_per(cap.high if cap else None, replicas),
                                 host=summarize_host([e for e in events if isinstance(e, HostSampled)])))
        for p in report.points:
            s = p.judged.stats
            if s.goodput_rps is not None and s.latency_p99_ms is not None and replicas:
                points.append(ParetoPoint(value=value, offered=p.offered, goodput_per_replica=round(
                    s.goodput_rps / replicas, 4), latency_p99_ms=s.latency_p99_ms, outcome=p.outcome))
    # A point that broke an SLO is no operating point, however much it answered: it is never on the front.
    held = [p for p in points if p.outcome != "fail"]
    front = [msgspec.structs.replace(p, on_front=p.outcome != "fail" and not any(
        q.goodput_per_replica >= p.goodput_per_replica and q.latency_p99_ms <= p.latency_p99_ms
        and (q.goodput_per_replica, q.latency_p99_ms) != (p.goodput_per_replica, p.latency_p99_ms)
        for q in held)) for p in points]
    return GridReport(key=key, entries=entries, pareto=front, unit=unit, host_note=_host_note(key, entries))


def _host_note(key: str, entries: Sequence[GridEntry]) -> str:
    hosts = [(e.value, e.host, max(e.host.cpus - e.host.outside_cpus, 0.01)) for e in entries if e.host is not None]
    if len(hosts) < 2:
        return ""
    most, least = max(hosts, key=lambda h: h[2]), min(hosts, key=lambda h: h[2])
    if most[2] / least[2] < UNEVEN:
        return ""
    return (f"The host was unequally busy: other processes took {figure(most[1].outside_cpus)} of "
            f"{most[1].cpus} CPUs on average while {key}={most[0]} ran and {figure(least[1].outside_cpus)} while "
            f"{key}={least[0]} ran, leaving it {figure(most[2] / least[2])}x less; their capacities differ by the "
            f"host's load as well as by {key}. Run the grid again on a quieter host to compare them.")


def _fmt(v: float | None) -> str:
    return "open" if v is None else figure(v)


def _rows(report: GridReport) -> list[list[str]]:
    rows = []
    for e in report.entries:
        c = e.capacity
        binding = SLO_NAMES.get(c.binding, c.binding) if c and c.binding else "-"
        rows.append([f"{report.key}={e.value}", e.run_id, _fmt(c.value if c else None),
                     f"[{_fmt(c.low if c else None)}, {_fmt(c.high if c else None)}]", binding,
                     str(e.replicas or "-"), _fmt(e.per_replica),
                     f"[{_fmt(e.per_replica_low)}, {_fmt(e.per_replica_high)}]", c.outcome if c else "none",
                     figure(e.host.outside_cpus) if e.host else "-"])
    return rows


_HEAD = ["configuration", "run", "capacity", "90% interval", "binding SLO", "replicas", "per replica",
         "per replica interval", "bracket", "other CPU"]


def _lead(report: GridReport) -> str:
    return (f"Capacity ({report.unit or 'load'}) per configuration and per replica, each with its 90 % interval; "
            "other CPU: the CPUs other processes on the host used on average while that configuration ran.")


_FRONT = ("Each judged load point: its goodput per replica (requests that met every SLO, answered right) against "
          "its client p99 latency. The front holds the points that no other beats on both; a point that broke an "
          "SLO is listed but never on it.")


def render_grid_markdown(report: GridReport) -> str:
    lines = [f"# aqbench sweep over [server] {report.key}", "", _lead(report), "",
             "| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD),
             *("| " + " | ".join(r) + " |" for r in _rows(report)), "",
             *([report.host_note, ""] if report.host_note else []),
             "## Pareto front (goodput per replica against p99 latency)", "", _FRONT, "",
             "| configuration | offered | verdict | goodput/replica | p99 ms | on the front |", "|---|---|---|---|---|---|",
             *(f"| {report.key}={p.value} | {figure(p.offered)} | {p.outcome or '-'} | {figure(p.goodput_per_replica)} "
               f"| {figure(p.latency_p99_ms)} | {'yes' if p.on_front else ''} |" for p in report.pareto), ""]
    return "\n".join(lines)


def _pareto_chart(report: GridReport) -> str:
    # The front first: its dots are drawn largest, under each configuration's, so they ring the points on it.
    series = [("Pareto front", [(p.goodput_per_replica, p.latency_p99_ms) for p in report.pareto if p.on_front])]
    series += [(f"{report.key}={v}", [(p.goodput_per_replica, p.latency_p99_ms) for p in report.pareto
                                      if p.value == v]) for v in dict.fromkeys(e.value for e in report.entries)]
    return scatter_chart("pareto", "Goodput per replica against p99 latency (lower right is better)", series,
                         x_label="goodput per replica (req/s)", y_label="p99 ms")


def render_grid_html(report: GridReport) -> str:
    table = ("<table><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in _HEAD) + "</tr></thead><tbody>"
             + "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in _rows(report))
             + "</tbody></table>")
    note = f'<p class="notice">{escape(report.host_note)}</p>' if report.host_note else ""
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>aqbench sweep grid</title>"
            "<style>body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;padding:0 12px}"
            "table{border-collapse:collapse}th,td{border:1px solid #d0d0d0;padding:3px 8px}"
            ".notice{border-left:4px solid #d9a400;padding-left:8px}svg{max-width:100%;height:auto}</style></head><body>"
            f"<h1>aqbench sweep over [server] {escape(report.key)}</h1><p>{escape(_lead(report))}</p>{table}{note}"
            f"<h2>Pareto front</h2><p>{escape(_FRONT)}</p>" + _pareto_chart(report) + "</body></html>")


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
