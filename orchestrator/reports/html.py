"""report.html from a RunReport: one self-contained file (inline CSS and SVG; no scripts, no links out).

Pictures: latency over time (client and server on one axis), latency distributions, a verdict grid of
items by arm, memory over time; then the same tables as report.md. Pure rendering of the report.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from orchestrator.reports.markdown import NOTICE_HEAD, is_failure, split_notices
from orchestrator.reports.noninferiority import NONINFERIORITY_HEAD, noninferiority_rows
from orchestrator.reports.schema import (
    ModelCharts,
    ModelRow,
    PhaseCounts,
    RunReport,
    Summary,
)
from orchestrator.reports.svg import (
    grid_chart,
    histogram_chart,
    line_chart,
    scatter_chart,
)
from orchestrator.reports.text import (
    COMPLETENESS_HEAD,
    INCOMPLETE_HEAD,
    completeness_rows,
    dash,
    incomplete_rows,
    mib,
    ms,
    num,
    pct,
    rate_cell,
    signed_pct,
)

__all__ = ["render_html"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}
h1{font-size:22px}h2{border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}h3{margin-top:24px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #d0d0d0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.status{font-weight:bold;padding:1px 6px;border-radius:3px}
.st-aiperf-qualified{background:#d8f0d8}.st-failed,.st-interrupted,.st-error{background:#f8d0d0}
.st-unsupported,.st-blocked,.st-not-run{background:#f0e0c0}.st-family-validated,.st-implemented{background:#e0e8f8}
pre{background:#f7f7f7;border:1px solid #e0e0e0;padding:8px;overflow-x:auto;font-size:12px;max-height:300px}
.figs svg{display:block;margin:8px 0;border:1px solid #eee;max-width:100%;height:auto}
.note{color:#666;font-size:12px}
"""


def _e(value: Any) -> str:
    return escape(dash if value is None or value == "" else str(value))


def _table(header: list[str], rows: list[list[Any]], numeric: set[int] = frozenset()) -> str:  # type: ignore[assignment]
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td class="num">{_e(v)}</td>' if i in numeric else f"<td>{_e(v)}</td>"
                                    for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _status(status: str) -> str:
    return f'<span class="status st-{escape(status)}">{escape(status)}</span>'


def _pre(value: Any, limit: int = 3000) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)
    return f"<pre>{escape(text[:limit])}</pre>"


def render_html(report: RunReport) -> str:
    """The whole report.html text."""
    p = report.provenance
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>aqbench report {escape(p.run_id)}</title>", f"<style>{_CSS}</style></head><body>",
        f"<h1>aqbench report: {escape(p.run_id or 'run')}</h1>",
        f'<p><code>{_e(p.command)}</code> · run status {_status(p.status)} · started {_e(p.started_at)} · '
        f"{num(p.duration_s, 1)} s · dataset {_e(p.dataset.name if p.dataset else None)}</p>",
    ]
    if p.torn_line:
        parts.append(f'<p class="note">The journal\'s last line ({p.torn_line.line}) was torn and skipped.</p>')
    parts.append("<h2>Results</h2>")
    rows = []
    for r in report.rows:
        http = r.correctness.get("http")
        t = r.timing
        rows.append("<tr>" + "".join([
            f"<td>{_e(r.model)}</td>", f"<td>{_e(r.checkpoint)}</td>", f"<td>{_e(r.family)}</td>",
            f"<td>{_status(r.status)}</td>", f"<td>{_e(r.failed_stage)}</td>",
            f'<td class="num">{_e(rate_cell(http.by_arm.get("audio") if http else None))}</td>',
            f'<td class="num">{_e(signed_pct(http.audio_lift.vs_silence if http else None))}</td>',
            f'<td class="num">{_e(signed_pct(http.audio_lift.vs_transcript if http else None))}</td>',
            f'<td class="num">{ms(t.request_latency_ms.p50)} / {ms(t.request_latency_ms.p99)}</td>',
            f'<td class="num">{ms(t.model_call_ms.p50)}</td>', f'<td class="num">{num(t.requests_per_s)}</td>',
        ]) + "</tr>")
    head = ["Model", "Checkpoint", "Family", "Status", "Failed stage", "Audio pass (http)", "Lift vs silence",
            "Lift vs transcript", "Client p50 / p99 ms", "Model call p50 ms", "Req/s"]
    parts.append("<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
                 + "".join(rows) + "</tbody></table>")

    parts.append("<h2>Failures</h2>")
    failures = [r for r in report.rows if is_failure(r)]
    errors, warnings = split_notices(report)
    if not failures and not errors:
        parts.append("<p>None: every model is aiperf-qualified.</p>")
    for r in failures:
        parts.append(_failure(r))
    if errors:
        parts.append("<h3>Run errors</h3>" + _table(NOTICE_HEAD, errors))

    parts.append("<h2>Details</h2>")
    if warnings:
        parts.append("<h3>Notices</h3>" + _table(NOTICE_HEAD, warnings))
    parts.append("<h3>Provenance</h3>")
    parts.append(_table(["Field", "Value"], [
        ["aqbench", f"{p.aqbench_version} ({p.aqbench_commit or 'no git commit'})"],
        ["AIPerf", f"{p.aiperf_version} (fingerprint {p.aiperf_fingerprint or dash})"],
        ["Python", p.python], ["OS", p.os], ["CPU", f"{p.cpu} ×{p.cpus}"], ["GPU", ", ".join(p.gpus) or "none seen"],
        ["Host", p.hostname],
        ["Dataset", f"{p.dataset.name} · identity {p.dataset.identity} · {p.dataset.items} items · arms "
                    f"{', '.join(p.dataset.arms)}" if p.dataset else None],
        ["bench.toml", f"{p.config_path} (sha256 {p.config_sha256})"], ["Started", p.started_at],
        ["Finished", p.finished_at or "never (interrupted)"],
        ["Exit", f"{p.status} (code {p.exit_code if p.exit_code is not None else dash}) {p.reason}"],
        ["Command", " ".join(p.argv)], ["Journal events", p.events],
    ]))
    for r in report.rows:
        parts.append(_model(r, report.charts.get(r.model)))
    if report.windows:
        parts.append("<h3>Request windows</h3>" + _table(
            ["Window", "Model", "Profiling ok/issued", "Errors", "Client p50/p99 ms", "Handler p50 ms", "Req/s",
             "Audio s/s", "Balanced", "AIPerf"],
            [[w.window, w.model, f"{w.counts.profiling.ok}/{w.counts.profiling.issued}", _causes(w.counts.profiling),
              f"{ms(w.timing.request_latency_ms.p50)} / {ms(w.timing.request_latency_ms.p99)}",
              ms(w.timing.handler_ms.p50), num(w.timing.requests_per_s), num(w.timing.audio_seconds_per_s),
              w.counts.accounting_balanced, w.aiperf.classification if w.aiperf else None] for w in report.windows]))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _causes(c: PhaseCounts) -> str:
    return ", ".join(f"{k} {v}" for k, v in c.by_cause.items()) or "0"


def _failure(r: ModelRow) -> str:
    out = [f"<h3>{_e(r.model)}: {_status(r.status)}{' at ' + _e(r.failed_stage) if r.failed_stage else ''}</h3>",
           f"<p>Reason: {_e(r.reason)}</p>"]
    for c in r.capability:
        if not c.passed:
            out.append(f"<p>Capability <code>{_e(c.check)}</code> failed: {_e(c.reason)}</p>")
            if c.evidence:
                out.append(_pre(c.evidence))
    gates = [g for g in r.gates if not g.passed]
    if gates:
        out.append(_table(["Gate", "Scope", "Required", "Observed"],
                          [[g.gate, g.scope, g.required, g.observed] for g in gates], {2, 3}))
    if r.failing_items:
        out.append("<p>Failing items:</p>" + _table(
            ["Item", "Arm", "Kind", "Verdict", "Answer", "Gold"],
            [[f.item_id, f.arm, f.kind, f.verdict, f.answer, f.gold] for f in r.failing_items]))
    for e in r.server.unexpected_exits:
        how = f"signal {e.signal}" if e.signal else f"code {e.returncode}"
        out.append(f"<p>Server incarnation {e.incarnation} (pid {e.pid}) exited during {_e(e.during)} "
                   f"with {_e(how)}.</p>")
        if e.output_tail:
            out.append(_pre("\n".join(e.output_tail)))
    c = r.counts
    if c.profiling.errors or c.warmup.errors:
        out.append(_table(["Phase", "Issued", "OK", "Errors", "By cause"],
                          [[n, pc.issued, pc.ok, pc.errors, _causes(pc)]
                           for n, pc in (("warmup", c.warmup), ("profiling", c.profiling)) if pc.issued], {1, 2, 3}))
    if c.accounting_problems:
        out.append(f"<p>Accounting problems: {_e('; '.join(c.accounting_problems))}</p>")
    for label, mm in (("Native/HTTP", r.identity.mismatches), ("Under load", r.load_identity_mismatches)):
        if mm:
            out.append(f"<p>{label} identity mismatches:</p>" + _table(
                ["Item", "Arm", "Answers"],
                [[m.item_id, m.arm, "; ".join(f"{k}: {v!r}" for k, v in m.answers.items())] for m in mm]))
    if r.aiperf and r.aiperf.classification not in ("", "complete"):
        out.append(f"<p>AIPerf run {_e(r.aiperf.classification)}: {_e(r.aiperf.reason)}</p>")
    return "".join(out)


def _srow(name: str, s: Summary) -> list[Any]:
    return [name, s.count, ms(s.p50), ms(s.p90), ms(s.p99), ms(s.mean)]


def _figures(r: ModelRow, ch: ModelCharts) -> str:
    figs = []
    lat = ch.latency
    figs.append(scatter_chart(
        "latency-over-time", f"{r.model}: latency over time"
        + (f" (1 in {ch.latency_stride} requests shown)" if ch.latency_stride > 1 else ""), [
            ("client request_latency", [(p.t_s, p.client_ms) for p in lat if p.client_ms is not None]),
            ("server handler_ms", [(p.t_s, p.handler_ms) for p in lat if p.handler_ms is not None]),
            ("server model_call_ms", [(p.t_s, p.model_call_ms) for p in lat if p.model_call_ms is not None]),
        ], x_label="seconds since run start", y_label="ms"))
    figs.append(histogram_chart("latency-distribution", f"{r.model}: latency distributions",
                                ch.histogram.edges_ms, ch.histogram.counts, x_label="ms"))
    for g in ch.grids:
        note = f" ({g.truncated} more items in report.json)" if g.truncated else ""
        figs.append(grid_chart(
            f"verdict-grid-{g.path}", f"{r.model}: verdicts via {g.path}{note}", g.arms,
            [(row.item_id, {a: (c.verdict, f"{c.verdict}; answer {c.answer!r}, gold {c.gold!r}")
                            for a, c in row.cells.items()}) for row in g.rows]))
    mem = ch.memory
    series = [("server RSS MiB", [(p.t_s, p.rss_bytes / 2**20) for p in mem])]
    if any(p.gpu_memory_bytes is not None for p in mem):
        series.append(("GPU memory MiB", [(p.t_s, p.gpu_memory_bytes / 2**20) for p in mem
                                          if p.gpu_memory_bytes is not None]))
    figs.append(line_chart("memory-over-time", f"{r.model}: memory over time", series,
                           x_label="seconds since run start", y_label="MiB"))
    return '<div class="figs">' + "".join(figs) + "</div>"


def _model(r: ModelRow, ch: ModelCharts | None) -> str:
    out = [f'<h3 id="model-{escape(r.model)}">{_e(r.model)} {_status(r.status)}</h3>']
    out.append(_table(["Checkpoint", "Profile", "Revision", "Family", "Native Task", "Precision", "Bundle sha256",
                       "Dataset"], [[r.checkpoint, r.profile, r.revision, r.family, r.native_task, r.precision,
                                     r.bundle_sha256, f"{r.dataset_name} {r.dataset_identity[:12]}"]]))
    if ch is not None:
        out.append(_figures(r, ch))
    stages = [s for s in r.stages if s.phase != "model"]
    if stages:
        out.append(_table(["Stage", "Outcome", "Seconds", "Reason"],
                          [[s.phase, s.outcome or "(unfinished)", num(s.duration_s), s.reason] for s in stages], {2}))
    if r.capability:
        out.append(_table(["Capability check", "Passed", "Reason"], [[c.check, c.passed, c.reason] for c in r.capability]))
    for path, pc in r.correctness.items():
        arms = list(pc.by_arm)
        out.append(f"<p>Correctness via {_e(path)}:</p>" + _table(
            ["Kind", *arms], [["all arms", *(rate_cell(pc.by_arm[a]) for a in arms)]]
            + [[k, *(rate_cell(v.get(a)) for a in arms)] for k, v in pc.by_kind.items()]))
        if path != "aiperf":
            lift = pc.audio_lift
            out.append(f"<p>Audio lift: {signed_pct(lift.vs_silence)} vs silence (audio {pct(lift.audio_rate)}, "
                       f"silence {pct(lift.silence_rate)}); {signed_pct(lift.vs_transcript)} vs transcript over "
                       f"{lift.speech_items} speech items (audio {pct(lift.audio_rate_speech)}, transcript "
                       f"{pct(lift.transcript_rate)}).</p>")
    if r.noninferiority is not None:
        out.append(_table(NONINFERIORITY_HEAD, noninferiority_rows(r.noninferiority)))
    if r.completeness:
        out.append(_table(COMPLETENESS_HEAD, completeness_rows(r.completeness), {1, 2}))
        if rows := incomplete_rows(r.completeness):
            out.append("<p>Incomplete answers:</p>" + _table(INCOMPLETE_HEAD, rows))
    if r.gates:
        out.append(_table(["Gate", "Scope", "Required", "Observed", "Passed"],
                          [[g.gate, g.scope, g.required, g.observed, g.passed] for g in r.gates], {2, 3}))
    if r.identity.outcome:
        out.append(f"<p>Native/HTTP identity: {_e(r.identity.outcome)}, {r.identity.compared} compared, "
                   f"{len(r.identity.mismatches)} mismatches; under load: {len(r.load_identity_mismatches)} "
                   f"mismatches.</p>")
    if r.aiperf_settings:
        out.append(_table(["AIPerf setting", "Value"], [[k, v] for k, v in sorted(r.aiperf_settings.items())]))
    c, t = r.counts, r.timing
    if c.profiling.issued or c.warmup.issued:
        out.append(_table(["Phase", "Issued", "OK", "Errors", "By cause"],
                          [[n, pc.issued, pc.ok, pc.errors, _causes(pc)]
                           for n, pc in (("warmup", c.warmup), ("profiling", c.profiling), ("other", c.other))
                           if pc.issued], {1, 2, 3}))
        scope = f" ({t.timing_scope})" if t.timing_scope else ""
        out.append(_table(["Timing (profiling, ok)", "n", "p50 ms", "p90 ms", "p99 ms", "mean ms"], [
            _srow("client request_latency", t.request_latency_ms), _srow("client lifecycle", t.client_lifecycle_ms),
            _srow("server handler_ms", t.handler_ms), _srow(f"server model_call_ms{scope}", t.model_call_ms),
        ], {1, 2, 3, 4, 5}))
        out.append(f"<p>Throughput: {num(t.requests_per_s)} requests/s and {num(t.audio_seconds_per_s)} audio s/s "
                   f"over {num(t.span_s)} s.</p>")
    s = r.server
    out.append(f"<p>Server: {s.incarnations} incarnation(s), {s.restarts} restart(s), {len(s.unexpected_exits)} "
               f"unexpected exit(s), {s.orphans_killed} orphan(s) killed; peak RSS {mib(s.peak_rss_bytes)}"
               + (f", peak GPU memory {mib(s.peak_gpu_memory_bytes)}" if s.peak_gpu_memory_bytes is not None else "")
               + ".</p>")
    cmds = "\n".join(x for x in (r.commands.qualify, r.commands.aiperf) if x)
    if cmds:
        out.append("<p>Reproduce:</p>" + _pre(cmds))
    return "".join(out)
