"""How report numbers read to people (shared by report.md and report.html): ms, %, MiB, pass counts.

Pure formatting; never computes a result.
"""

from __future__ import annotations

import json
import re

import msgspec

from orchestrator.events import AiperfSettings
from orchestrator.reports.schema import (
    AiperfRun,
    CompletenessLine,
    Counts,
    PassRate,
    PhaseCounts,
    Restart,
    ServerFacts,
    WindowSummary,
)

__all__ = ["words", "ms", "pct", "gate_pct", "signed_pct", "mib", "num", "rate_cell", "dash", "causes_text", "COMPLETENESS_HEAD", "INCOMPLETE_HEAD",
           "completeness_rows", "incomplete_rows", "settings_rows", "json_text", "server_story_lines",
           "ERROR_ANSWER_HEAD", "error_answer_rows", "WINDOW_ANSWER_HEAD", "window_answer_rows", "aiperf_in_words"]

COMPLETENESS_HEAD = ["Completeness via", "Checked", "Complete", "Defects"]
INCOMPLETE_HEAD = ["Path", "Item", "Arm", "Request id", "Defects", "Verdict", "Answer"]

dash = "–"

ERROR_ANSWER_HEAD = ["Phase", "Cause", "HTTP", "Requests", "Answer"]
# AIPerf's own error lines end with its source location, e.g. "(system_controller.py:2370)": not for readers.
_SOURCE_PLACE = re.compile(r"\s*\([\w./-]+\.py:\d+\)")


def ms(value: float | None) -> str:
    if value is None:
        return dash
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def pct(value: float | None) -> str:
    return dash if value is None else f"{value * 100:.1f}%"


def gate_pct(observed: float, required: float) -> str:
    """An observed gate rate as a percentage, with as many decimals as it takes not to read the same as the
    required rate it differs from (89.96 % against 90 % shows 89.96%, not 90.0%)."""
    for digits in (1, 2, 3, 4):
        text = f"{observed * 100:.{digits}f}%"
        if observed == required or text != f"{required * 100:.{digits}f}%":
            return text
    return f"{observed * 100}%"


def signed_pct(value: float | None) -> str:
    return dash if value is None else f"{value * 100:+.1f} pp"


def mib(value: int | None) -> str:
    return dash if value is None else f"{value / 2**20:.1f} MiB"


def num(value: float | None, digits: int = 2) -> str:
    return dash if value is None else f"{value:.{digits}f}"


def rate_cell(r: PassRate | None) -> str:
    """`87.5% (7/8)`; a dash for an empty slice."""
    if r is None or not r.total:
        return dash
    return f"{pct(r.rate)} ({r.correct}/{r.total})"


def completeness_rows(lines: list[CompletenessLine]) -> list[list[str]]:
    """`http | 24 | 22 | echo 1, length_limit 1` per path; `complete` when no defect was found."""
    return [[c.path, str(c.checked), str(c.complete),
             ", ".join(f"{d} {n}" for d, n in c.defects.items()) or ("complete" if c.checked else "none checked")]
            for c in lines]


def incomplete_rows(lines: list[CompletenessLine]) -> list[list[str]]:
    """Each incomplete answer beside its verdict (capability answers are not scored: a dash)."""
    rows = []
    for c in lines:
        for i in c.items:
            rows.append([c.path, i.item_id, i.arm, i.request_id,
                         "; ".join(f"{d} ({why})" for d, why in zip(i.defects, i.details, strict=False)) or ", ".join(i.defects),
                         i.verdict or dash, repr(i.answer)])
        if c.items_left_out:
            rows.append([c.path, f"... {c.items_left_out} more in the journal", "", "", "", "", ""])
    return rows


def causes_text(c: PhaseCounts) -> str:
    """Errors by cause, each with the crash rule that decided it where one did:
    `connection 8 (refused 8), server_crash 2 (open_at_exit 2)`."""
    parts = []
    for cause, n in c.by_cause.items():
        rules = {k.split("/", 1)[1]: v for k, v in c.by_rule.items() if k.split("/", 1)[0] == cause}
        note = f" ({', '.join(f'{r} {m}' for r, m in rules.items())})" if rules else ""
        parts.append(f"{cause} {n}{note}")
    return ", ".join(parts) or "0"


def settings_rows(settings: AiperfSettings | None) -> list[list[object]]:
    """The AIPerf workload as (setting, value) rows, by setting name."""
    return [[k, v] for k, v in sorted(msgspec.structs.asdict(settings).items())] if settings is not None else []


def json_text(value: msgspec.Struct) -> str:
    """A typed value (capability evidence, ...) as indented JSON for a reader, keys sorted. A string that holds
    a JSON object or array (an HTTP body) is shown as that JSON, indented, not as one escaped line."""
    return json.dumps(_bodies_opened(msgspec.to_builtins(value, order="sorted")), indent=1, sort_keys=True,
                      ensure_ascii=False)


def _bodies_opened(value: object) -> object:
    if isinstance(value, dict):
        return {k: _bodies_opened(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_bodies_opened(v) for v in value]
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return _bodies_opened(json.loads(value))
        except ValueError:
            return value
    return value


def server_story_lines(s: ServerFacts) -> list[str]:
    """Each restart with its cause, each span the server was degraded or unhealthy, and each asked-for stop
    that left a traceback, one sentence each."""
    out = [_restart_line(r) for r in s.restart_causes]
    for x in s.state_spans:
        until = (f"to {num(x.until_s, 1)} s ({num(x.until_s - x.from_s, 1)} s; then {x.ended_by})"
                 if x.until_s is not None else "until the journal ends")
        out.append(f"Server {x.state} (incarnation {x.incarnation}) from {num(x.from_s, 1)} s {until}: "
                   f"{x.reason or 'no reason was journaled'}.")
    for e in s.expected_stops:
        how = e.signal or f"code {e.returncode}"
        out.append(f"Incarnation {e.incarnation} stopped as aqbench asked ({how}); the traceback in its output "
                   f"({e.last_line}) is the server's own handling of that signal: expected, not an error.")
    return out


def _restart_line(r: Restart) -> str:
    """A restart when it happened (its incarnation's spawn), or one decided that the run's end overtook."""
    why = f"because {r.reason or 'no reason was journaled'}"
    if r.spawned_s is None:
        return (f"Restart {r.attempt}: restart decided at {num(r.at_s, 1)} s; the run ended first (incarnation "
                f"{r.incarnation} was never started; its backoff was {num(r.backoff_s, 1)} s). It was decided {why}.")
    return (f"Restart {r.attempt}: incarnation {r.incarnation} started {num(r.spawned_s, 1)} s into the run "
            f"(decided at {num(r.at_s, 1)} s, after a {num(r.backoff_s, 1)} s backoff), {why}.")


def error_answer_rows(c: Counts) -> list[list[object]]:
    """What failed requests were answered (the server's body for 4xx/5xx), most frequent first per group."""
    return [[a.phase, a.cause, a.http_status, a.count, a.message] for a in c.error_answers]


WINDOW_ANSWER_HEAD = ["Window", *ERROR_ANSWER_HEAD]


def window_answer_rows(windows: list[WindowSummary]) -> list[list[object]]:
    """What each window's failed requests were answered, by phase, cause, HTTP status and body (a 413 apart from
    a 400): every window's rows, a run that did not fail included."""
    return [[w.window, *r] for w in windows for r in error_answer_rows(w.counts)]


def aiperf_in_words(run: AiperfRun, c: Counts) -> str:
    """How an AIPerf run ended, said from what the journal counted: its exit, whether it wrote its summary
    files, how many profiling requests failed and why; AIPerf's own words follow, without source locations."""
    p = c.profiling
    exit_text = f"exit code {run.returncode}" if run.returncode is not None else "no exit code"
    files = "" if "no ready marker" not in run.reason else " and wrote no summary files"
    failed = (f"{p.errors} of {p.issued} profiling requests failed ({causes_text(p)})" if p.errors
              else f"all {p.issued} profiling requests were answered")
    if "AIPerf exited" in run.reason:  # adapters/aiperf: "...; AIPerf exited N: <its last ERROR lines>"
        why = "AIPerf's last error: " + run.reason.split("AIPerf exited", 1)[1].split(":", 1)[-1].strip()
    elif files:
        why = ""  # the sentence above says all the judgement said
    else:
        why = f"Judged from its files: {run.reason}" if run.reason else ""
    why = _SOURCE_PLACE.sub("", why)
    return f"AIPerf ended {run.classification or 'unfinished'} ({exit_text}){files}; {failed}." + (f" {why}" if why else "")


def words(value: object, blank: str = dash) -> object:
    """A table cell's value in a reader's words, never a Python literal: yes/no for a truth value, a list's items
    joined by commas, a mapping as `key value` pairs; `blank` where there is none (None or an empty string).
    Anything else is returned as it is."""
    if value is None or value == "":
        return blank
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(str(words(v, blank)) for v in value) or blank
    if isinstance(value, dict):
        return ", ".join(f"{k} {words(v, blank)}" for k, v in value.items()) or blank
    return value
