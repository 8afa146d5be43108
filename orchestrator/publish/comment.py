"""What `aqbench publish` writes, before scrubbing: the result rows (JSON), the reproducible commands and
the Markdown comment ready to paste into the tracking issue. Pure: reads only the runs' folded reports.
"""

from __future__ import annotations

import shlex

import msgspec

from orchestrator.judge.stats import Summary
from orchestrator.ledger import LOAD_ONLY_COMMANDS, Ledger, RunEvidence
from orchestrator.publish.current import KeyCheck
from orchestrator.reports.schema import ModelRow, PassRate, Provenance

__all__ = ["capability_cell", "commands_markdown", "comment_markdown", "hardware_class", "rows_json"]

_encoder = msgspec.json.Encoder(order="deterministic")


def rows_json(runs: list[RunEvidence], keys: KeyCheck) -> dict[str, object]:
    """The result rows of every run with the provenance that makes them comparable (plain data); a row made
    under another run key than the current one carries `stale` (what changed)."""
    out = []
    for run in runs:
        prov = run.report.provenance
        out.append({
            "run_id": run.run_id, "command": run.command, "status": prov.status, "started_at": prov.started_at,
            "finished_at": prov.finished_at, "versions": _versions(prov), "hardware": hardware_class(prov),
            "dataset": msgspec.to_builtins(prov.dataset) if prov.dataset else None,
            "trtmc_revision": run.trtmc_revision, "rows": [_row_data(run, r, keys) for r in run.report.rows],
        })
    return {"current_keys": keys.source, "runs": out}


def _row_data(run: RunEvidence, row: ModelRow, keys: KeyCheck) -> dict[str, object]:
    data: dict[str, object] = msgspec.to_builtins(row)
    if note := keys.note(run.run_id, row.model):
        data["stale"] = note
    return data


def _versions(prov: Provenance) -> str:
    commit = f" ({prov.aqbench_commit[:12]})" if prov.aqbench_commit else ""
    return f"aqbench {prov.aqbench_version}{commit}, AIPerf {prov.aiperf_version or '?'}, Python {prov.python}"


def hardware_class(prov: Provenance) -> str:
    """`2x AMD EPYC, no GPU`: the class of machine, not the machine."""
    gpus = ", ".join(sorted(set(prov.gpus))) if prov.gpus else "no GPU"
    return f"{prov.cpus}x {prov.cpu or 'CPU'}, {gpus}"


def capability_cell(row: ModelRow) -> str:
    """The native audio capability the run established (or why it did not)."""
    if not row.capability:
        return "not probed by this run"
    failed = [c for c in row.capability if not c.passed]
    if failed:
        return "; ".join(f"{c.check} failed: {c.reason or 'no reason given'}" for c in failed)
    return "audio-qa (" + ", ".join(c.check for c in row.capability) + " passed)"


def _rate(r: PassRate | None) -> str:
    if r is None or not r.total:
        return "-"
    return f"{r.correct}/{r.total}" + (f" ({r.rate:.1%})" if r.rate is not None else "")


def _correctness(row: ModelRow) -> str:
    parts = []
    for path in ("http", "native", "aiperf"):
        pc = row.correctness.get(path)
        if pc and "audio" in pc.by_arm:
            parts.append(f"{path} {_rate(pc.by_arm['audio'])}")
    return ", ".join(parts) or "-"


def _ms(s: Summary) -> str:
    if not s.count or s.p50 is None:
        return "-"
    return f"p50 {s.p50:.1f} / p99 {s.p99:.1f} ms (n={s.count})"


def _cell(value: object) -> str:
    text = "-" if value in (None, "") else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _result_cells(run: RunEvidence, keys: KeyCheck) -> list[list[str]]:
    """Comment rows of one run: one per judged model, or one per AIPerf window of a load-only run."""
    if run.command not in LOAD_ONLY_COMMANDS:
        cells = []
        for row in run.report.rows:
            status = row.status + (f" at {row.failed_stage}" if row.failed_stage else "")
            if row.reason and row.status != "aiperf-qualified":
                status += f": {row.reason}"
            if note := keys.note(run.run_id, row.model):  # never shown as a current result
                status = f"stale, not counted (was {status}): {note}"
            cells.append([row.model, row.profile, row.checkpoint, row.precision, capability_cell(row), status,
                          _correctness(row), _ms(row.timing.request_latency_ms), _ms(row.timing.model_call_ms),
                          run.run_id])
        return cells
    prov = run.report.provenance
    models = {m.name: m for m in run.config.models} if run.config is not None else {}
    cells = []
    for w in run.report.windows:
        name = w.model or w.window.split("/", 1)[0]
        m = models.get(name)
        status = f"{run.command} {prov.status}" + (f": {prov.reason}" if prov.reason else "")
        load = _rate(w.load_correctness) if w.load_correctness.total else "not scored"
        cells.append([f"{name} ({w.window})", m.profile if m else "", m.checkpoint if m else "", m.precision if m else "",
                      "not probed (load run)", status, f"aiperf {load}", _ms(w.timing.request_latency_ms),
                      _ms(w.timing.model_call_ms), run.run_id])
    return cells


def commands_markdown(runs: list[RunEvidence]) -> str:
    """The commands that reproduce each run and row, as shell blocks."""
    out = ["# Reproducible commands", ""]
    for run in runs:
        argv = run.report.provenance.argv
        out += [f"## {run.run_id} ({run.command})", "", "```sh", "aqbench " + shlex.join(argv[1:]), "```", ""]
        if run.command in LOAD_ONLY_COMMANDS:
            for w in run.report.windows:
                if w.aiperf and w.aiperf.command:
                    out += [f"{w.window}, AIPerf:", "", "```sh", w.aiperf.command, "```", ""]
            continue
        for row in run.report.rows:
            for what, cmd in (("qualify", row.commands.qualify), ("AIPerf", row.commands.aiperf
                              or (row.aiperf.command if row.aiperf else ""))):
                if cmd:
                    out += [f"{row.model}, {what}:", "", "```sh", cmd, "```", ""]
    return "\n".join(out).rstrip() + "\n"


def comment_markdown(runs: list[RunEvidence], keys: KeyCheck, ledger: Ledger | None = None) -> str:
    """The Markdown comment to paste into the tracking issue: one row per result, timing with the client's
    request latency and the server's `public_task_call_wall` apart (a row under another run key than the
    current one marked stale), then provenance, the run-key rule and the ledger verdict."""
    out = ["### aqbench results", ""]
    header = ["model", "profile", "checkpoint", "precision", "native audio capability", "status", "correctness (audio arm)",
              "client request_latency", "server public_task_call_wall", "run"]
    out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for run in runs:
        out += ["| " + " | ".join(_cell(c) for c in cells) + " |" for cells in _result_cells(run, keys)]
    out += ["", "| run | command | versions | hardware class | dataset identity | TRTMC revision |", "|---|---|---|---|---|---|"]
    for run in runs:
        prov = run.report.provenance
        ds = prov.dataset
        dataset = f"{ds.name} {ds.identity[:16]} ({ds.items} items)" if ds else "-"
        cells = [run.run_id, run.command, _versions(prov), hardware_class(prov), dataset, run.trtmc_revision[:12]]
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    out += ["", f"Run keys: current under {keys.source}; "
            + (f"{len(keys.stale)} stale row(s) marked, not counted." if keys.stale else "every row is current.")]
    if ledger is not None:
        in_scope = [ln for ln in ledger.lines if ln.in_scope]
        out += ["", (f"**Group ledger: {'can close' if ledger.can_close else 'cannot close'}** "
                f"({sum(ln.final for ln in in_scope)} of {len(in_scope)} checkpoints final; "
                f"{len(ledger.variants)} variants apart).")]
        out += [f"- {b}" for b in ledger.blockers[:30]]
        if len(ledger.blockers) > 30:
            out.append(f"- ... and {len(ledger.blockers) - 30} more (see ledger.md)")
    out += ["", ("Reproduce: see `commands.md`; full rows in `rows.json`. Paths are relative to named roots "
            "(`<checkout>`, `<venv>`, `<run-dir>`, ...); host, user, ports and other environment values are "
            "replaced by placeholders.")]
    return "\n".join(out).rstrip() + "\n"
