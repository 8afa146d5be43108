"""report.md from a RunReport: the result table first, failures with their evidence next, then details.

Pure rendering of the report; computes nothing that is not already in it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

from orchestrator.reports.gpu_tables import gpu_markdown, gpu_notices
from orchestrator.reports.noninferiority import NONINFERIORITY_HEAD, noninferiority_rows
from orchestrator.reports.schema import ModelRow, PassRate, PathCorrectness, RunReport, Summary
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
    gate_pct,
    incomplete_rows,
    json_text,
    mib,
    ms,
    num,
    pct,
    rate_cell,
    server_story_lines,
    settings_rows,
    signed_pct,
    window_answer_rows,
    words,
)

__all__ = ["render_markdown", "is_failure", "run_state", "gate_rows", "kind_flags"]

QUALIFIED = "aiperf-qualified"
# Rows that need no explaining: a qualified model, a --plan row, a run-aiperf run AIPerf fully answered.
# A soak that no verdict failed is no failure: inconclusive verdicts are listed in its soak report.
_FINE = frozenset({QUALIFIED, "planned", "aiperf-complete", "soak-passed", "soak-inconclusive"})


def is_failure(row: ModelRow) -> bool:
    """A row that needs explaining: anything short of aiperf-qualified (a plan, or a run-aiperf run that
    AIPerf completed, needs none)."""
    return row.status not in _FINE


def none_text(report: RunReport) -> str:
    """What the Failures section says when nothing failed."""
    if any(r.status == "planned" for r in report.rows):
        return "None."
    if report.provenance.command == "soak":
        return "None: no soak verdict failed."
    return "None: every model is aiperf-qualified."


# A model that ended with one of these did not reach a final status: the run stopped short of it.
_UNFINISHED = frozenset({"not-run", "interrupted", "error", "planned"})


def run_state(report: RunReport) -> str:
    """The header's run status: interrupted "no RunFinished" only when the journal has none; for qualify,
    "completed" when every model reached a final status, whatever it is (blocked, unsupported, failed...), and
    the run itself raised no error (its exit code, in the provenance, still says whether all qualified); else
    the journaled status."""
    p = report.provenance
    if p.finished_unix_ns is None:
        return "INTERRUPTED (no RunFinished)"
    run_errors = [n for n in report.notices if n.kind != "warned"]
    # qualify only: a soak or run-aiperf fails on its own verdicts, not on how its models ended.
    if (p.command == "qualify" and p.status == "failed" and report.rows and not run_errors
            and all(r.status not in _UNFINISHED for r in report.rows)):
        return "completed"
    return p.status


def _ungated_kinds(row: ModelRow, arm: str) -> list[tuple[str, PassRate]]:
    """Kinds on an overall gate's arm that no per-kind gate of their own judges."""
    http = row.correctness.get("http")
    gated = {g.scope.removeprefix("kind:") for g in row.gates if g.scope.startswith("kind:")}
    if http is None:
        return []
    return [(kind, arms[arm]) for kind, arms in http.by_kind.items()
            if kind not in gated and arm in arms and arms[arm].total]


def gate_rows(row: ModelRow) -> list[list[object]]:
    """Gate, Scope, Required, Observed, Passed rows: each gate, and under an overall gate every kind it
    averages over without a gate of its own, so a kind at 0 % cannot hide behind a passing average."""
    out: list[list[object]] = []
    for g in row.gates:
        out.append([g.gate, g.scope, f"≥ {pct(g.required)}", gate_pct(g.observed, g.required) if g.applicable else dash,
                    g.passed if g.applicable else "not applicable (no answers)"])
        if g.scope.startswith("arm:"):
            for kind, rate in _ungated_kinds(row, g.scope.removeprefix("arm:")):
                flag = "not gated; NONE CORRECT" if not rate.correct else "not gated"
                out.append([f"↳ kind {kind}", f"kind:{kind}", dash, rate_cell(rate), flag])
    return out


class KindFlag(NamedTuple):
    """`<model>: kind <kind> <rest>`; each renderer sets the kind as code its own way."""

    model: str
    kind: str
    rest: str


def kind_flags(row: ModelRow) -> list[KindFlag]:
    """Kinds with no correct answer on a gate arm that only an overall gate covers."""
    out = []
    for g in row.gates:
        if g.scope.startswith("arm:") and g.applicable:
            arm = g.scope.removeprefix("arm:")
            out += [KindFlag(row.model, kind, f"{rate.correct}/{rate.total} correct on the {arm} arm (no gate of its "
                             f"own; the overall gate {'passed' if g.passed else 'failed'})")
                    for kind, rate in _ungated_kinds(row, arm) if not rate.correct]
    return out


NOTICE_HEAD = ["Kind", "Code", "Model", "Message"]


def split_notices(report: RunReport) -> tuple[list[list[str]], list[list[str]]]:
    """Table rows of the run's errors (shown with the failures) and of its warnings (e.g. no GPU to
    sample: notices in the details), as both renderers show them."""
    # One row per notice text: the model's and the reference side's samplers both say "no GPU to sample", and
    # a reader needs it once, beside the models it concerns (a dash only where it concerns none).
    merged: dict[tuple[str, str, str], list[str]] = {}
    for n in report.notices:
        models = merged.setdefault((n.kind, n.code, n.message), [])
        if n.model and n.model not in models:
            models.append(n.model)
    errors: list[list[str]] = []
    warnings: list[list[str]] = []
    for (kind, code, message), models in merged.items():
        (warnings if kind == "warned" else errors).append([kind, code, ", ".join(models), message])
    return errors, warnings


def _cell(value: object) -> str:
    text = str(words(value))  # yes/no, lists joined: never a Python literal
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_cell(v) for v in r) + " |" for r in rows]
    return out + [""]


def _code(value: object, limit: int = 1500) -> list[str]:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)
    if len(text) > limit:
        text = text[:limit] + "\n… (truncated; see report.json)"
    return ["```", text.replace("```", "'''"), "```", ""]


def _headline(row: ModelRow) -> list[object]:
    http = row.correctness.get("http")
    audio = http.by_arm.get("audio") if http else None
    lift = http.audio_lift if http else None
    t = row.timing
    return [
        row.model, row.checkpoint, row.family, f"**{row.status}**", row.failed_stage,
        rate_cell(audio), signed_pct(lift.vs_silence if lift else None),
        signed_pct(lift.vs_transcript if lift else None),
        f"{ms(t.request_latency_ms.p50)} / {ms(t.request_latency_ms.p99)}",
        ms(t.model_call_ms.p50), num(t.requests_per_s),
    ]


def render_markdown(report: RunReport) -> str:
    """The whole report.md text (ends with a newline)."""
    p = report.provenance
    out = [f"# aqbench report: {p.run_id or 'run'}", ""]
    state = run_state(report)
    dataset = f"{p.dataset.name} ({p.dataset.identity[:12]})" if p.dataset else dash
    out += [f"`{p.command or '?'}` · run status **{state}** · started {p.started_at or dash} · "
            f"{num(p.duration_s, 1)} s · dataset {dataset}", ""]
    if p.torn_line:
        out += [f"> The journal's last line ({p.torn_line.line}) was torn and skipped.", ""]

    out += ["## Results", ""]
    out += _table(["Model", "Checkpoint", "Family", "Status", "Failed stage", "Audio pass (http)",
                   "Lift vs silence", "Lift vs transcript", "Client p50 / p99 ms", "Model call p50 ms",
                   "Req/s"], [_headline(r) for r in report.rows])
    flags = [f for r in report.rows for f in kind_flags(r)]
    if flags:
        out += ["Flagged:", "", *(f"- {f.model}: kind `{f.kind}` {f.rest}" for f in flags), ""]
    planned = [r for r in report.rows if r.status == "planned"]
    if planned:
        out += ["## Plan", "", "Nothing was run (`--plan`). What a run would do:", ""]
        out += [f"- **{r.model}**: {r.reason}" for r in planned] + [""]

    failures = [r for r in report.rows if is_failure(r)]
    errors, warnings = split_notices(report)
    out += ["## Failures", ""]
    if not failures and not errors:
        out += [none_text(report), ""]
    for row in failures:
        out += _failure(row)
    if errors:
        out += ["### Run errors", ""]
        out += _table(NOTICE_HEAD, errors)

    out += ["## Details", ""]
    if warnings:
        out += ["### Notices", ""]
        out += _table(NOTICE_HEAD, warnings)
    out += ["### Provenance", ""]
    out += _table(["Field", "Value"], [
        ["aqbench", f"{p.aqbench_version} ({p.aqbench_commit or 'no git commit'})"],
        ["AIPerf", f"{p.aiperf_version} (fingerprint {p.aiperf_fingerprint or dash})"],
        ["Python", p.python], ["OS", p.os], ["CPU", f"{p.cpu} ×{p.cpus}"],
        ["GPU", ", ".join(p.gpus) or "none seen"], ["Host", p.hostname],
        ["Dataset", f"{p.dataset.name} · identity {p.dataset.identity} · {p.dataset.items} items · "
                    f"arms {', '.join(p.dataset.arms)}" if p.dataset else dash],
        ["bench.toml", f"{p.config_path} (sha256 {p.config_sha256})"],
        ["Started", p.started_at], ["Finished", p.finished_at or "never (interrupted)"],
        ["Exit", f"{p.status} (code {p.exit_code if p.exit_code is not None else dash}) {p.reason}"],
        ["Command", " ".join(p.argv)], ["Journal events", p.events],
    ])
    out += gpu_markdown(p.gpu_identity, [g for r in report.rows for g in r.server.gpus], gpu_notices(report))
    for row in report.rows:
        out += _details(row)
    if report.windows:
        out += ["### Request windows", ""]
        out += _table(["Window", "Model", "Profiling ok/issued", "Errors", "Client p50 / p99 ms",
                       "Handler p50 ms", "Req/s", "Audio s/s", "Balanced", "AIPerf"],
                      [[w.window, w.model, f"{w.counts.profiling.ok}/{w.counts.profiling.issued}",
                        causes_text(w.counts.profiling), f"{ms(w.timing.request_latency_ms.p50)} / "
                        f"{ms(w.timing.request_latency_ms.p99)}", ms(w.timing.handler_ms.p50),
                        num(w.timing.requests_per_s), num(w.timing.audio_seconds_per_s),
                        w.counts.accounting_balanced, w.aiperf.classification if w.aiperf else dash]
                       for w in report.windows])
        if answered := window_answer_rows(report.windows):
            out += ["What the failed requests were answered, by window:", ""]
            out += _table(WINDOW_ANSWER_HEAD, answered)
    return "\n".join(out).rstrip("\n") + "\n"


def _failure(row: ModelRow) -> list[str]:
    where = f" at {row.failed_stage}" if row.failed_stage else ""
    out = [f"### {row.model}: {row.status}{where}", "", f"Reason: {row.reason or dash}", ""]
    failed_checks = [c for c in row.capability if not c.passed]
    for c in failed_checks:
        out += [f"Capability `{c.check}` failed: {c.reason}", ""]
        if c.evidence:
            out += _code(json_text(c.evidence))
    failed_gates = [g for g in row.gates if g.applicable and not g.passed]
    if failed_gates:
        out += _table(["Gate", "Scope", "Required", "Observed"],
                      [[g.gate, g.scope, f"≥ {pct(g.required)}", gate_pct(g.observed, g.required)]
                       for g in failed_gates])
    if row.failing_items:
        out += ["Failing items:", ""]
        out += _table(["Item", "Arm", "Kind", "Verdict", "Answer", "Gold"],
                      [[f.item_id, f.arm, f.kind, f.verdict, f.answer, f.gold] for f in row.failing_items])
    for e in row.server.unexpected_exits:
        how = f"signal {e.signal}" if e.signal else f"code {e.returncode}"
        out += [f"Server incarnation {e.incarnation} (pid {e.pid}) exited during {e.during} with {how}.", ""]
        if e.output_tail:
            out += _code("\n".join(e.output_tail))
    counts = row.counts
    if counts.profiling.errors or counts.warmup.errors:
        out += _table(["Phase", "Issued", "OK", "Errors", "By cause"],
                      [[name, pc.issued, pc.ok, pc.errors, causes_text(pc)]
                       for name, pc in (("warmup", counts.warmup), ("profiling", counts.profiling)) if pc.issued])
    if counts.error_answers:
        out += ["What the failed requests were answered:", ""]
        out += _table(ERROR_ANSWER_HEAD, error_answer_rows(counts))
    if counts.accounting_problems:
        out += ["Accounting problems: " + "; ".join(counts.accounting_problems), ""]
    for label, mismatches in (("Native/HTTP", row.identity.mismatches), ("Under load", row.load_identity_mismatches)):
        if mismatches:
            out += [f"{label} identity mismatches:", ""]
            out += _table(["Item", "Arm", "Answers"],
                          [[m.item_id, m.arm, "; ".join(f"{k}: {v!r}" for k, v in m.answers.items())]
                           for m in mismatches])
    if row.aiperf and row.aiperf.classification not in ("", "complete"):
        out += [aiperf_in_words(row.aiperf, counts), ""]
    return out


def _summary_row(name: str, s: Summary) -> list[object]:
    return [name, s.count, ms(s.p50), ms(s.p90), ms(s.p99), ms(s.mean)]


def _details(row: ModelRow) -> list[str]:
    """One model's details: identity, stages, what was checked, what was measured, its server, how to rerun."""
    out = [f"### {row.model}", ""]
    out += _table(["Checkpoint", "Profile", "Revision", "Family", "Native Task", "Precision", "Bundle sha256",
                   "Dataset"],
                  [[row.checkpoint, row.profile, row.revision, row.family, row.native_task, row.precision,
                    row.bundle_sha256, f"{row.dataset_name} {row.dataset_identity[:12]}"]])
    out += _checks(row) + _aiperf_lines(row) + _measured(row) + _server_lines(row)
    if row.commands.qualify or row.commands.aiperf:
        out += ["Reproduce:", ""]
        out += _code("\n".join(x for x in (row.commands.qualify, row.commands.aiperf) if x))
    return out


def _checks(row: ModelRow) -> list[str]:
    """Stages, capability probes, correctness per path, non-inferiority, completeness, gates and identity."""
    out: list[str] = []
    stages = [s for s in row.stages if s.phase != "model"]
    if stages:
        out += _table(["Stage", "Outcome", "Seconds", "Reason"],
                      [[s.phase, s.outcome or "(unfinished)", num(s.duration_s), s.reason] for s in stages])
    if row.capability:
        out += _table(["Capability check", "Passed", "Reason"],
                      [[c.check, c.passed, c.reason] for c in row.capability])
    for path, pc in row.correctness.items():
        out += _correctness(path, pc)
    if row.noninferiority is not None:
        out += _table(NONINFERIORITY_HEAD, noninferiority_rows(row.noninferiority))
    if row.completeness:
        out += _table(COMPLETENESS_HEAD, completeness_rows(row.completeness))
        if rows := incomplete_rows(row.completeness):
            out += ["Incomplete answers:", ""]
            out += _table(INCOMPLETE_HEAD, rows)
    if row.gates:
        out += _table(["Gate", "Scope", "Required", "Observed", "Passed"], gate_rows(row))
    if row.identity.outcome:
        out += [f"Native/HTTP identity: {row.identity.outcome}, {row.identity.compared} compared, "
                f"{len(row.identity.mismatches)} mismatches; under load: "
                f"{len(row.load_identity_mismatches)} mismatches.", ""]
    return out


def _correctness(path: str, pc: PathCorrectness) -> list[str]:
    """One path's pass rates by arm and kind and, off AIPerf, its audio lift."""
    arms = list(pc.by_arm)
    out = [f"Correctness via {path}:", ""]
    out += _table(["Kind", *arms], [["all arms", *(rate_cell(pc.by_arm[a]) for a in arms)]]
                  + [[k, *(rate_cell(v.get(a)) for a in arms)] for k, v in pc.by_kind.items()])
    lift = pc.audio_lift
    if path != "aiperf":
        silenced = pc.by_arm["silence"].total if "silence" in pc.by_arm else 0
        audio_n = pc.by_arm["audio"].total if "audio" in pc.by_arm else 0
        over = f" over the {silenced} items of the silence arm" if 0 < silenced < audio_n else ""
        out += [f"Audio lift: {signed_pct(lift.vs_silence)} vs silence{over} (audio {pct(lift.audio_rate)}, "
                f"silence {pct(lift.silence_rate)}); {signed_pct(lift.vs_transcript)} vs transcript over "
                f"{lift.speech_items} speech items (audio {pct(lift.audio_rate_speech)}, transcript "
                f"{pct(lift.transcript_rate)}).", ""]
    return out


def _aiperf_lines(row: ModelRow) -> list[str]:
    """The AIPerf run's version, outcome and window, and the settings it ran with."""
    out: list[str] = []
    if row.aiperf:
        out += [f"AIPerf {row.aiperf.version} ({row.aiperf.classification or 'not finished'}, "
                f"exit {row.aiperf.returncode}), window `{row.aiperf.window}`:", ""]
    if row.aiperf_settings:
        out += _table(["Setting", "Value"], settings_rows(row.aiperf_settings))
    return out


def _measured(row: ModelRow) -> list[str]:
    """Requests by phase and cause, timing percentiles and throughput (nothing when no request was issued)."""
    c = row.counts
    if not (c.profiling.issued or c.warmup.issued):
        return []
    out = _table(["Phase", "Issued", "OK", "Errors", "By cause"],
                 [[n, pc.issued, pc.ok, pc.errors, causes_text(pc)]
                  for n, pc in (("warmup", c.warmup), ("profiling", c.profiling), ("other", c.other))
                  if pc.issued])
    if c.unmatched:
        out += ["Unmatched halves: " + ", ".join(f"{k} {v}" for k, v in c.unmatched.items()), ""]
    t = row.timing
    scope = f" ({t.timing_scope})" if t.timing_scope else ""
    out += _table(["Timing (profiling, ok)", "n", "p50 ms", "p90 ms", "p99 ms", "mean ms"], [
        _summary_row("client request_latency", t.request_latency_ms),
        _summary_row("server handler_ms", t.handler_ms),
        _summary_row(f"server model_call_ms{scope}", t.model_call_ms),
    ])
    out += [f"Throughput: {num(t.requests_per_s)} requests/s and {num(t.audio_seconds_per_s)} audio s/s "
            f"over {num(t.span_s)} s.", ""]
    return out


def _server_lines(row: ModelRow) -> list[str]:
    """The server's incarnations, exits and peaks in one line, then its story (restarts, troubled spans)."""
    s = row.server
    out = [f"Server: {s.incarnations} incarnation(s), {s.restarts} restart(s), {len(s.unexpected_exits)} "
           f"unexpected exit(s), {s.orphans_killed} orphan(s) killed"
           + (f", {s.orphans_reaped} orphan(s) reaped dead (zombies left to aqbench)" if s.orphans_reaped else "")
           + f"; peak RSS {mib(s.peak_rss_bytes)}"
           + (f", peak GPU memory {mib(s.peak_gpu_memory_bytes)}" if s.peak_gpu_memory_bytes is not None else "")
           + (f", device memory used {mib(s.peak_device_memory_used_bytes)}"
              if s.peak_device_memory_used_bytes is not None else "")
           + (f"; GPU busy {num(row.gpu_busy_percent)} % over the AIPerf phase"
              if row.gpu_busy_percent is not None else "")
           + (f"; ready after {num(s.startup_s)} s." if s.startup_s is not None else "."), ""]
    story = server_story_lines(s)
    return out + ([*(f"- {line}" for line in story), ""] if story else [])
