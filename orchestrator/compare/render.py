"""compare.json, compare.md and compare.html from a Comparison; pure rendering, every text escaped.
The HTML is one self-contained file in report.html's style: the verdict, the provenance diff, then per
model the overlaid latency CDFs (inline SVG), the delta table with intervals and the changed answers."""

from __future__ import annotations

from pathlib import Path

import msgspec
from markupsafe import Markup

from orchestrator.compare.schema import ChangedAnswer, Comparison, Figure, ModelComparison
from orchestrator.reports.svg import line_chart
from orchestrator.reports.templating import render
from orchestrator.supervision.host_summary import describe_host

__all__ = ["CSS", "MAX_LISTED", "render_html", "render_json", "render_markdown", "write_comparison"]

MAX_LISTED = 200  # changed answers shown in md/html (compare.json keeps all)
_ANSWER_CHARS = 160
_HEAD = ["model", "figure", "baseline", "candidate", "change (interval)", "tolerance", "class", "n", "method"]

CSS = """
body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}
h1{font-size:22px}h2{border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}h3{margin-top:24px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #d0d0d0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.status{font-weight:bold;padding:1px 6px;border-radius:3px;white-space:nowrap}
.st-regressed,.st-refused{background:#f8d0d0}.st-improved,.st-no-regression{background:#d8f0d8}
.st-inconclusive{background:#f0e0c0}.st-unchanged{background:#eef}
tr.differs td{background:#fff6d8}tr.blocks td{background:#f8d0d0}
.figs svg{display:block;margin:8px 0;border:1px solid #eee;max-width:100%;height:auto}
.note{color:#666;font-size:12px}
"""


def render_json(comparison: Comparison) -> bytes:
    """compare.json: the Comparison as indented JSON (keys in schema order)."""
    return msgspec.json.format(msgspec.json.encode(comparison), indent=1) + b"\n"


def _value(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "ms":
        return f"{v:.1f} ms"
    if unit == "req/s":
        return f"{v:.2f} req/s"
    if unit == "ratio":
        return f"{v:.3f}x"
    return f"{v * 100:.1f} %"


def _interval(f: Figure) -> str:
    if f.lower is None or f.upper is None:
        return "-"
    if f.relative:
        return f"[{f.lower * 100:+.1f} %, {f.upper * 100:+.1f} %]"
    return f"[{f.lower * 100:+.1f}, {f.upper * 100:+.1f}] pt"


def _tolerance(f: Figure) -> str:
    return f"±{f.tolerance * 100:g} %" if f.relative else f"±{f.tolerance * 100:g} pt"


def _row(model: str, f: Figure) -> list[str]:
    note = f" ({f.note})" if f.note else ""
    items = f"; items: {', '.join(f.items[:20])}" + (f" and {len(f.items) - 20} more" if len(f.items) > 20 else "") \
        if f.items else ""
    return [model, f.name, _value(f.baseline, f.unit), _value(f.candidate, f.unit), _interval(f), _tolerance(f),
            f.change + note + items, f"{f.n_baseline} / {f.n_candidate}", f.method]


def _short(text: str | None) -> str:
    if text is None:
        return "-"
    return text if len(text) <= _ANSWER_CHARS else text[:_ANSWER_CHARS - 1] + "…"


def _answer_row(a: ChangedAnswer) -> list[str]:
    varied = " (varied within the run)" if a.varied else ""
    return [a.path, a.item_id, a.arm, _short(a.baseline), a.baseline_verdict or "-", _short(a.candidate) + varied,
            a.candidate_verdict or "-"]


_ANSWER_HEAD = ["path", "item", "arm", "baseline answer", "verdict", "candidate answer", "verdict"]


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    def cell(v: str) -> str:
        return v.replace("|", "\\|").replace("\n", " ")

    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows] + [""])


def render_markdown(c: Comparison) -> str:
    """compare.md: outcome, refusals, provenance differences, the delta table, changed answers."""
    out = [f"# aqbench compare: {c.outcome}", "",
           f"Baseline `{c.baseline.journal}` ({c.baseline.run_id}, {c.baseline.status}); candidate "
           f"`{c.candidate.journal}` ({c.candidate.run_id}, {c.candidate.status}). Exit code {c.exit_code}.", "",
           c.reason, ""]
    if c.refusals:
        out += ["## Not comparable", ""] + [f"- {r}" for r in c.refusals] + [""]
    out += [f"Host while each ran: baseline {describe_host(c.baseline.host)}; candidate "
            f"{describe_host(c.candidate.host)}.", ""]
    differs = [p for p in c.provenance if p.differs]
    out += ["## Provenance differences", ""]
    out += _md_table(["fact", "baseline", "candidate", "blocks"],
                     [[p.name, p.baseline, p.candidate, "yes" if p.blocks else ""] for p in differs]) if differs \
        else ["None: same tools, server, dataset and workload.", ""]
    for side, names in (("baseline", c.only_in_baseline), ("candidate", c.only_in_candidate)):
        if names:
            out += [f"Only in the {side} (not compared): {', '.join(names)}.", ""]
    if c.models:
        out += ["## Figures", ""]
        out += _md_table(_HEAD, [_row(m.model, f) for m in c.models for f in m.figures])
    for m in c.models:
        out += _md_answers(m)
    return "\n".join(out)


def _md_answers(m: ModelComparison) -> list[str]:
    if not m.deterministic:
        return [f"{m.model}: answers not compared item by item (the model samples: correctness.deterministic "
                f"is false).", ""]
    head = [f"## Changed answers: {m.model}", "",
            f"{len(m.changed_answers)} of {m.answers_compared} answers compared changed.", ""]
    if not m.changed_answers:
        return head
    return head + _md_table(_ANSWER_HEAD, [_answer_row(a) for a in m.changed_answers[:MAX_LISTED]])


def _cdf_chart(m: ModelComparison, series: str, label: str) -> str:
    lines = [(side, [(x, f) for x, f in m.cdfs.get(f"{series}/{side}", [])]) for side in ("baseline", "candidate")]
    return line_chart(f"cdf-{series}", f"{m.model}: {label} CDF", lines, x_label=f"{label} (ms)",
                      y_label="fraction of requests")


def render_html(c: Comparison) -> str:
    """compare.html (templates/compare.html): self-contained (inline CSS and SVG, no scripts, no links out)."""
    models = [{"model": m, "client_cdf": Markup(_cdf_chart(m, "client", "client latency")),
               "model_call_cdf": Markup(_cdf_chart(m, "model_call", "server model call")),
               "delta_rows": [_row(m.model, f)[1:] for f in m.figures],
               "answer_rows": [_answer_row(a) for a in m.changed_answers[:MAX_LISTED]]} for m in c.models]
    return render("compare.html", c=c, css=Markup(CSS), models=models, delta_head=_HEAD[1:],
                  answer_head=_ANSWER_HEAD,
                  provenance_rows=[[p.name, p.baseline, p.candidate] for p in c.provenance],
                  provenance_class=["blocks" if p.blocks else "differs" if p.differs else "" for p in c.provenance],
                  only_in=[("baseline", c.only_in_baseline), ("candidate", c.only_in_candidate)])


def write_comparison(c: Comparison, out: Path) -> tuple[Path, Path, Path]:
    """Write compare.json, compare.md and compare.html into `out` (created). Blocks (file writes)."""
    out.mkdir(parents=True, exist_ok=True)
    paths = (out / "compare.json", out / "compare.md", out / "compare.html")
    paths[0].write_bytes(render_json(c))
    paths[1].write_text(render_markdown(c), encoding="utf-8")
    paths[2].write_text(render_html(c), encoding="utf-8")
    return paths
