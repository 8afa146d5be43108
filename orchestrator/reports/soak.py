"""The soak report (soak.json, soak.md, soak.html): per-window time series pictures and the verdict
table with the numbers behind each verdict, folded from the journal alone.

It complements report.{json,md,html} (the qualify-shaped report of the same journal). Reads only events
and the journal; the window summaries are SoakWindowClosed's dicts, kept as journaled.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
from markupsafe import Markup

from orchestrator.events import (
    AnyEvent,
    RunFinished,
    RunStarted,
    ServerExited,
    ServerRestarting,
    SoakVerdict,
    SoakWindowClosed,
)
from orchestrator.journal import TornLine, iter_journal
from orchestrator.reports.svg import line_chart
from orchestrator.reports.templating import render
from orchestrator.reports.text import dash

__all__ = ["SoakReport", "VerdictRow", "fold_soak", "build_soak_report", "inconclusive_lines",
           "render_soak_markdown", "render_soak_html", "write_soak_report"]

# 2: verdicts carry `outcome` (pass/fail/inconclusive) instead of passed/judged; `in progress` status.
SOAK_REPORT_VERSION = 2
_MIB = 2.0**20


class VerdictRow(msgspec.Struct, frozen=True, kw_only=True):
    """One verdict as last journaled (the final one when the soak ended, else the latest checkpoint)."""

    metric: str
    outcome: str
    final: bool
    reason: str
    detail: dict[str, Any] = {}

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"


class SoakReport(msgspec.Struct, frozen=True, kw_only=True):
    """soak.json: the run, its closed windows (summaries as journaled), verdicts and server exits."""

    report_version: int = SOAK_REPORT_VERSION
    run_id: str = ""
    command: str = ""
    status: str = "interrupted"
    reason: str = ""
    settings: dict[str, Any] = {}
    windows: list[dict[str, Any]] = []
    verdicts: list[VerdictRow] = []
    verdicts_final: bool = False
    checkpoints: int = 0
    exits: list[dict[str, Any]] = []
    restarts: int = 0
    torn_line: int | None = None


def _outcome(ev: SoakVerdict, detail: dict[str, Any]) -> str:
    """The journaled outcome; journals older than the three outcomes said passed and judged."""
    if ev.outcome:
        return ev.outcome
    if not ev.passed:
        return "fail"
    return "pass" if detail.get("judged", True) else "inconclusive"


def fold_soak(events: Iterable[AnyEvent], torn: TornLine | None = None, *, live: bool = False) -> SoakReport:
    """Pure fold of a soak journal. Memory: one summary dict per window and one row per metric.

    `live`: the journal is being written by a running soak (a checkpoint report): without RunFinished
    the status is `in progress`, not `interrupted`."""
    started: RunStarted | None = None
    finished: RunFinished | None = None
    windows: dict[int, dict[str, Any]] = {}
    latest: dict[str, VerdictRow] = {}
    checkpoint_seqs: set[int] = set()
    exits: list[dict[str, Any]] = []
    restarts = 0
    settings: dict[str, Any] = {}
    for ev in events:
        if isinstance(ev, RunStarted):
            started = ev
            settings = msgspec.to_builtins(ev.config.soak) if ev.config is not None else {}
        elif isinstance(ev, RunFinished):
            finished = ev
        elif isinstance(ev, SoakWindowClosed):
            summary = msgspec.to_builtins(ev.summary) if ev.summary is not None else {}
            windows[ev.index] = {**summary, "window": ev.window, "index": ev.index}
        elif isinstance(ev, SoakVerdict):
            prior = latest.get(ev.metric)
            if prior is not None and prior.final and not ev.final:
                continue  # a final verdict is never replaced by a checkpoint's
            detail = dict(ev.detail)
            outcome = _outcome(ev, detail)
            detail.pop("judged", None)
            # Typed fields first; journals written before them kept everything in `detail`.
            for key, value in (("slope", ev.slope), ("interval", ev.interval), ("limit", ev.limit),
                               ("unit", ev.unit), ("windows_closed", ev.windows_closed or None)):
                if value is not None and value != "":
                    detail[key] = value
            reason = ev.reason or str(detail.pop("reason", ""))
            detail.pop("reason", None)
            latest[ev.metric] = VerdictRow(metric=ev.metric, outcome=outcome, final=ev.final, reason=reason,
                                           detail=detail)
            if not ev.final:
                checkpoint_seqs.add(int(detail.get("windows_closed") or 0))
        elif isinstance(ev, ServerExited) and not ev.expected:
            exits.append({"incarnation": ev.incarnation, "returncode": ev.returncode, "signal": ev.signal,
                          "during": ev.during, "unix_ns": ev.ts_ns, "output_tail": list(ev.output_tail[-5:])})
        elif isinstance(ev, ServerRestarting):
            restarts += 1
    verdicts = list(latest.values())
    return SoakReport(
        run_id=started.run_id if started else "", command=started.command if started else "",
        status=finished.status if finished else ("in progress" if live else "interrupted"),
        reason=finished.reason if finished else (
            f"the soak is running; this checkpoint report covers the {len(windows)} window(s) closed so far"
            if live else "the journal has no RunFinished: the run was interrupted"),
        settings=settings, windows=[windows[i] for i in sorted(windows)], verdicts=verdicts,
        verdicts_final=bool(verdicts) and all(v.final for v in verdicts), checkpoints=len(checkpoint_seqs),
        exits=exits, restarts=restarts, torn_line=torn.line if torn else None)


def build_soak_report(journal_path: str | Path, *, live: bool = False) -> SoakReport:
    """Stream the journal through fold_soak (`live`: see fold_soak). Blocks (file reads)."""
    torn: list[TornLine] = []
    return fold_soak(iter_journal(journal_path, on_torn=torn.append), torn[0] if torn else None, live=live)


# ------------------------------------------------------------------------------------ series


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _t_min(report: SoakReport, w: dict[str, Any]) -> float:
    origin = report.windows[0].get("start_unix_ns") or 0
    mid = ((w.get("start_unix_ns") or 0) + (w.get("end_unix_ns") or 0)) / 2
    return (mid - origin) / 60e9


def _series(report: SoakReport, *path: str, scale: float = 1.0) -> list[tuple[float, float]]:
    out = []
    for w in report.windows:
        v = _get(w, *path)
        if isinstance(v, (int, float)):
            out.append((_t_min(report, w), v * scale))
    return out


def _correct_pct(report: SoakReport) -> list[tuple[float, float]]:
    return [(_t_min(report, w), 100.0 * w["correct"] / w["scored"]) for w in report.windows if w.get("scored")]


def _charts(report: SoakReport) -> list[str]:
    x = "minutes since the first window started (window midpoints)"
    return [
        line_chart("soak-latency", "Latency per window", [
            ("client p50", _series(report, "client_latency_ms", "p50")),
            ("client p99", _series(report, "client_latency_ms", "p99")),
            ("server p50", _series(report, "server_latency_ms", "p50")),
            ("server p99", _series(report, "server_latency_ms", "p99")),
        ], x_label=x, y_label="ms"),
        line_chart("soak-memory", "Server memory per window", [
            ("RSS median", _series(report, "rss", "median_bytes", scale=1 / _MIB)),
            ("RSS peak", _series(report, "rss", "peak_bytes", scale=1 / _MIB)),
            ("GPU memory peak", _series(report, "gpu_memory", "peak_bytes", scale=1 / _MIB)),
        ], x_label=x, y_label="MiB"),
        line_chart("soak-observer", "The observer's own memory per window", [
            ("aqbench RSS median", _series(report, "orchestrator_rss", "median_bytes", scale=1 / _MIB)),
            ("AIPerf tree RSS median", _series(report, "aiperf_rss", "median_bytes", scale=1 / _MIB)),
        ], x_label=x, y_label="MiB"),
        line_chart("soak-errors", "Error rate per window", [
            ("errors %", _series(report, "error_rate", scale=100.0)),
        ], x_label=x, y_label="% of profiling requests"),
        line_chart("soak-correctness", "Correctness under load per window", [
            ("correct %", _correct_pct(report)),
        ], x_label=x, y_label="% of scored answers"),
        line_chart("soak-gaps", "Time without load before each window", [
            ("gap before", _series(report, "gap_before_s")),
        ], x_label=x, y_label="s"),
    ]


# ------------------------------------------------------------------------------------ tables


def _num(v: Any, digits: int = 3) -> str:
    """`digits` significant digits, written out plainly: 3150 and 0.00012, never 3.15e+03."""
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v != v:
        return dash
    return format(Decimal(f"{v:.{digits}g}"), "f")


def _interval(d: dict[str, Any]) -> str:
    iv = d.get("interval")
    return f"[{_num(iv[0])}, {_num(iv[1])}]" if isinstance(iv, list) and len(iv) == 2 else dash


def _verdict_rows(report: SoakReport) -> list[list[str]]:
    rows = []
    for v in report.verdicts:
        d = v.detail
        rows.append([v.metric, v.outcome.upper(),
                     "final" if v.final else f"checkpoint ({d.get('windows_closed', '?')} windows)",
                     _num(d.get("slope")), _interval(d), _num(d.get("limit")), str(d.get("unit", "")), v.reason])
    return rows


_VERDICT_HEAD = ["metric", "result", "when", "slope", "interval", "limit", "unit", "numbers"]
_WINDOW_HEAD = ["window", "issued", "ok", "errors (by cause)", "req/s", "client p50/p99 ms", "server p50/p99 ms",
                "correct", "RSS start/end/peak MiB", "aqbench/AIPerf RSS MiB", "restarts", "gap before s",
                "AIPerf run"]


def _mib(v: Any) -> str:
    return f"{v / _MIB:.0f}" if isinstance(v, (int, float)) else dash


def _window_rows(report: SoakReport) -> list[list[str]]:
    rows = []
    for w in report.windows:
        causes = ", ".join(f"{k} {n}" for k, n in (w.get("by_cause") or {}).items())
        c, s, rss = w.get("client_latency_ms") or {}, w.get("server_latency_ms") or {}, w.get("rss") or {}
        own, aiperf = w.get("orchestrator_rss") or {}, w.get("aiperf_rss") or {}
        rows.append([
            str(w.get("window")), str(w.get("issued", 0)), str(w.get("ok", 0)),
            f"{w.get('errors', 0)}" + (f" ({causes})" if causes else ""), _num(w.get("throughput_rps")),
            f"{_num(c.get('p50'))}/{_num(c.get('p99'))}", f"{_num(s.get('p50'))}/{_num(s.get('p99'))}",
            f"{w.get('correct', 0)}/{w.get('scored', 0)}"
            + ("" if w.get("correctness_passed") is not False else " below gate"),
            f"{_mib(rss.get('start_bytes'))}/{_mib(rss.get('end_bytes'))}/{_mib(rss.get('peak_bytes'))}",
            f"{_mib(own.get('median_bytes'))}/{_mib(aiperf.get('median_bytes'))}",
            str(w.get("restarts", 0)), _num(w.get("gap_before_s")),
            str(w.get("segment") or dash) + (f" ({w['aiperf_classification']})" if w.get("aiperf_classification")
                                             else ""),
        ])
    return rows


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    def cell(v: str) -> str:
        return v.replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(cell(c) for c in r) + " |" for r in rows), ""]


def _headline(report: SoakReport) -> str:
    failed = [v.metric for v in report.verdicts if v.outcome == "fail"]
    undecided = [v.metric for v in report.verdicts if v.outcome == "inconclusive"]
    state = "final" if report.verdicts_final else ("checkpoint" if report.verdicts else "no verdict yet")
    if failed:
        verdict = f"FAILED ({', '.join(failed)})"
    elif not report.verdicts:
        verdict = "not judged yet"
    else:
        verdict = "PASSED" + (f" with {len(undecided)} inconclusive" if undecided else "")
    return f"Soak {verdict}; verdicts: {state}; run status: {report.status}; windows closed: {len(report.windows)}"


def inconclusive_lines(report: SoakReport) -> list[str]:
    """What the evidence could not decide, one line per verdict, for the top of the report."""
    return [f"{v.metric}: {v.reason}" for v in report.verdicts if v.outcome == "inconclusive"]


def render_soak_markdown(report: SoakReport) -> str:
    lines = [f"# aqbench soak {report.run_id}", "", _headline(report), ""]
    if report.reason:
        lines += [f"Reason: {report.reason}", ""]
    if undecided := inconclusive_lines(report):
        lines += ["Inconclusive (the evidence cannot decide; not a failure unless run with --strict):", "",
                  *(f"- {u}" for u in undecided), ""]
    if report.torn_line is not None:
        lines += [f"Note: the journal's last line ({report.torn_line}) is torn and was skipped.", ""]
    lines += ["## Verdicts", "", *_md_table(_VERDICT_HEAD, _verdict_rows(report))]
    lines += ["## Windows", "", *_md_table(_WINDOW_HEAD, _window_rows(report))]
    if report.exits:
        lines += ["## Unexpected server exits", ""]
        for e in report.exits:
            lines.append(f"- incarnation {e['incarnation']}: code {e['returncode']} {e['signal']} during {e['during']}")
        lines += ["", f"Restarts: {report.restarts}", ""]
    lines += ["Pictures (latency, memory, error rate, correctness per window) are in soak.html.", ""]
    return "\n".join(lines)


_CSS = ("body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}"
        "table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}"
        "th,td{border:1px solid #d0d0d0;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}"
        ".figs svg{display:block;margin:8px 0;border:1px solid #eee;max-width:100%;height:auto}")


def render_soak_html(report: SoakReport) -> str:
    """soak.html from its Jinja2 template (autoescaped; the charts are SVG that svg.py built escaped)."""
    return render("soak.html", report=report, css=_CSS, headline=_headline(report),
                  undecided=inconclusive_lines(report), verdict_head=_VERDICT_HEAD, verdict_rows=_verdict_rows(report),
                  charts=[Markup(c) for c in _charts(report)], window_head=_WINDOW_HEAD,
                  window_rows=_window_rows(report))


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_soak_report(journal_path: str | Path, out_dir: str | Path, *,
                      live: bool = False) -> tuple[Path, Path, Path]:
    """Fold the journal and write soak.json, soak.md and soak.html into `out_dir` (`live`: a running soak's
    checkpoint, see fold_soak). Blocks."""
    report = build_soak_report(journal_path, live=live)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = (out / "soak.json", out / "soak.md", out / "soak.html")
    _write_atomic(paths[0], msgspec.json.format(msgspec.json.encode(report, order="sorted"), indent=1) + b"\n")
    _write_atomic(paths[1], render_soak_markdown(report).encode())
    _write_atomic(paths[2], render_soak_html(report).encode())
    return paths
