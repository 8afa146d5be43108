"""report.html from a RunReport: one self-contained file (inline CSS and SVG; no scripts, no links out).
The markup lives in `templates/report.html` and `report_sections.html`; this module picks rows and draws charts.
"""

from __future__ import annotations

from collections import Counter

from markupsafe import Markup

from orchestrator.reports.gpu_tables import gpu_context, gpu_notices
from orchestrator.reports.markdown import (
    NOTICE_HEAD,
    gate_rows,
    is_failure,
    kind_flags,
    none_text,
    run_state,
    split_notices,
)
from orchestrator.reports.noninferiority import NONINFERIORITY_HEAD, noninferiority_rows
from orchestrator.reports.schema import (
    ModelCharts,
    ModelRow,
    PathCorrectness,
    Provenance,
    RunReport,
    WindowSummary,
)
from orchestrator.reports.svg import grid_chart, histogram_chart, line_chart, scatter_chart
from orchestrator.reports.templating import render
from orchestrator.reports.text import (
    COMPLETENESS_HEAD,
    ERROR_ANSWER_HEAD,
    INCOMPLETE_HEAD,
    WINDOW_ANSWER_HEAD,
    aiperf_in_words,
    causes_text,
    completeness_rows,
    dash,
    error_answer_rows,
    incomplete_rows,
    json_text,
    ms,
    num,
    rate_cell,
    server_story_lines,
    settings_rows,
    window_answer_rows,
)

__all__ = ["render_html", "CONTROL_ARMS"]

# The arms that withhold the audio (silence in its place, or its transcript): a model that listens answers
# wrong there, so those cells are coloured as expected.
CONTROL_ARMS = ("silence", "transcript")

_WINDOW_HEAD = ["Window", "Model", "Profiling ok/issued", "Errors", "Client p50/p99 ms", "Handler p50 ms", "Req/s",
                "Audio s/s", "Balanced", "AIPerf"]


# Pictures: latency over time (client and server on one axis), latency distributions, a verdict grid of items by arm,
# memory over time; then the same tables as report.md. The templates are autoescaped.
def render_html(report: RunReport) -> str:
    """The whole report.html text."""
    errors, warnings = split_notices(report)
    return render(
        "report.html", report=report, run_state=run_state(report),
        flags=[f for r in report.rows for f in kind_flags(r)],
        planned=[r for r in report.rows if r.status == "planned"], none_text=none_text(report),
        failures=[r for r in report.rows if is_failure(r)], errors=errors, warnings=warnings,
        provenance_rows=_provenance_rows(report.provenance),
        models=[(r, _figures(r, ch) if (ch := report.charts.get(r.model)) is not None else None,
                 _grids(r, ch) if ch is not None else []) for r in report.rows],
        stage_columns=_stage_columns(report.rows),
        window_head=_WINDOW_HEAD, window_rows=[_window_row(w) for w in report.windows],
        notice_head=NOTICE_HEAD, completeness_head=COMPLETENESS_HEAD, incomplete_head=INCOMPLETE_HEAD,
        # Row builders the model sections call (numbers are formatted by the environment's filters).
        causes=causes_text, answers=_answers, gate_rows=gate_rows, completeness_rows=completeness_rows,
        incomplete_rows=incomplete_rows, correctness_head=_correctness_head, correctness_rows=_correctness_rows,
        noninferiority_head=NONINFERIORITY_HEAD, noninferiority_rows=noninferiority_rows, settings_rows=settings_rows,
        json_text=json_text, server_story_lines=server_story_lines, error_answer_head=ERROR_ANSWER_HEAD,
        error_answer_rows=error_answer_rows, aiperf_in_words=aiperf_in_words,
        gpu=gpu_context(report.provenance.gpu_identity, [g for r in report.rows for g in r.server.gpus],
                        gpu_notices(report)),
        window_answer_head=WINDOW_ANSWER_HEAD, window_answer_rows=window_answer_rows(report.windows),
    )



def _answers(answers: dict[str, str | None]) -> str:
    """Each path's answer beside its name, quoted, so differing whitespace shows."""
    return "; ".join(f"{k}: {v!r}" for k, v in answers.items())


def _correctness_head(paths: dict[str, PathCorrectness]) -> list[str]:
    """Kind, then a column per path and arm (`http audio`, `http silence`, ..., `aiperf audio`)."""
    return ["Kind", *(f"{path} {arm}" for path, pc in paths.items() for arm in pc.by_arm)]


def _correctness_rows(paths: dict[str, PathCorrectness]) -> list[list[str]]:
    """Pass rates by path and arm in one table (the per-item grids summed up): all kinds first, then one row per
    question kind, in the order the paths first name them."""
    kinds = list(dict.fromkeys(k for pc in paths.values() for k in pc.by_kind))
    cols = [(pc, arm) for pc in paths.values() for arm in pc.by_arm]
    return ([["all kinds", *(rate_cell(pc.by_arm[a]) for pc, a in cols)]]
            + [[k, *(rate_cell(pc.by_kind.get(k, {}).get(a)) for pc, a in cols)] for k in kinds])


def _provenance_rows(p: Provenance) -> list[list[object]]:
    return [
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
    ]


def _window_row(w: WindowSummary) -> list[object]:
    t, c = w.timing, w.counts
    return [w.window, w.model, f"{c.profiling.ok}/{c.profiling.issued}", causes_text(c.profiling),
            f"{ms(t.request_latency_ms.p50)} / {ms(t.request_latency_ms.p99)}", ms(t.handler_ms.p50),
            num(t.requests_per_s), num(t.audio_seconds_per_s), c.accounting_balanced,
            w.aiperf.classification if w.aiperf else None]


def _grids(r: ModelRow, ch: ModelCharts) -> list[tuple[str, str, Markup]]:
    """Each path's per-item verdict grid as (path, its one-line summary, inline SVG): the page folds them under
    the pass rates by kind and arm, which sum them up."""
    out = []
    for g in ch.grids:
        note = f" ({g.truncated} more items in report.json)" if g.truncated else ""
        cells = [c for row in g.rows for c in row.cells.values()]
        counts = ", ".join(f"{n} {v}" for v, n in sorted(Counter(c.verdict for c in cells).items()))
        summary = f"{len(g.rows) + g.truncated} items × {len(g.arms)} arms via {g.path}: {counts or 'no verdicts'}"
        out.append((g.path, summary, Markup(grid_chart(
            f"verdict-grid-{g.path}", f"{r.model}: verdicts via {g.path}{note}", g.arms,
            [(row.item_id, {a: (c.verdict, f"{c.verdict}; answer {c.answer!r}, gold {c.gold!r}")
                            for a, c in row.cells.items()}) for row in g.rows], expected_wrong=CONTROL_ARMS))))
    return out


def _stage_columns(rows: list[ModelRow]) -> list[str]:
    """The stages any model reached, in the order they ran (the model's own phase left out)."""
    seen: dict[str, None] = {}
    for r in rows:
        seen.update((s.phase, None) for s in r.stages if s.phase != "model")
    return list(seen)


def _figures(r: ModelRow, ch: ModelCharts) -> list[Markup]:
    """The model's pictures as inline SVG (svg.py escapes every text it draws, so they are markup)."""
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
    mem = ch.memory
    series = [("server RSS MiB", [(p.t_s, p.rss_bytes / 2**20) for p in mem])]
    if any(p.gpu_memory_bytes is not None for p in mem):
        series.append(("GPU memory MiB", [(p.t_s, p.gpu_memory_bytes / 2**20) for p in mem
                                          if p.gpu_memory_bytes is not None]))
    figs.append(line_chart("memory-over-time", f"{r.model}: memory over time", series,
                           x_label="seconds since run start", y_label="MiB"))
    return [Markup(f) for f in figs]
