"""`aqbench report RUN_DIR [--out DIR] [--checkpoint]`: rebuild a run's reports from its journal."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.base.errors import UsageError

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        help="rebuild a run's reports from its events.jsonl",
        description="Rebuild report.json, report.md and report.html from RUN_DIR/events.jsonl alone, and for a "
        "soak's journal soak.json, soak.md and soak.html too (a sweep's: sweep.json, sweep.md and sweep.html); from "
        "an ab session's journal ab.json, ab.md and ab.html instead. "
        "The same journal always gives a byte-identical report.json. Exit 0 when the reports were written "
        "(whatever the run's verdict), 2 when RUN_DIR has no journal or an empty one, 3 when the journal is corrupt "
        "(a bad line before the last, or a duplicated or moved line: its seq does not grow).",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (runs/<id>/) or its events.jsonl")
    p.add_argument("--out", default=None, metavar="DIR", help="where to write the reports (default: RUN_DIR)")
    p.add_argument("--checkpoint", action="store_true",
                   help="the journal is a running soak's: write soak.json, soak.md and soak.html only, and read a "
                        "missing RunFinished as 'in progress', not 'interrupted' (what a soak runs at each checkpoint)")
    p.set_defaults(func=run)


def _is_empty(journal: Path) -> bool:
    """No event at all: a 0-byte file, or blank lines only (of a compact journal, once decompressed)."""
    # Imported here, not at the top: as in run(), the journal module loads only for the commands that read one.
    from orchestrator.spine.journal import read_lines

    return not any(raw.strip() for _, raw, _ in read_lines(journal, bytes))


def _ab_reports(journal: Path, out: Path) -> list[Path] | None:
    """An `ab` journal's ab.json, ab.md and ab.html (what `aqbench ab` writes; no report.*, whose per-model
    qualification rows an A/B session has none of), decided with the [compare] tolerances its run journaled
    (without `--strict`, which only the command line knew). None for any other journal."""
    # Imported here, not at the top: ab's deciding and rendering load only when a journal is an ab session's.
    from orchestrator.ab import decide, write_result
    from orchestrator.config import CompareConfig
    from orchestrator.events import RunStarted
    from orchestrator.spine.journal import iter_journal

    first = next(iter_journal(journal), None)
    if not (isinstance(first, RunStarted) and first.command == "ab"):
        return None
    cfg = first.config.compare if first.config else CompareConfig()
    return list(write_result(decide(journal, cfg), out))


def run(args: argparse.Namespace) -> int:
    # Imported here: orchestrator.spine.logs loads structlog, which `aqbench --help` never needs.
    # Imported here, not at the top: the reports (Jinja2 templates) load only for the commands that write one.
    from orchestrator.events import RunStarted
    from orchestrator.reports import write_reports
    from orchestrator.reports.soak import SoakFold, write_soak_report
    from orchestrator.reports.sweep import write_sweep_report
    from orchestrator.spine.journal import TornLine, iter_journal, journal_path
    from orchestrator.spine.logs import say

    target = Path(args.run_dir)
    journal = target if target.is_file() else journal_path(target)
    if not journal.is_file():
        raise UsageError(f"{journal}: no run journal here; pass a run folder (runs/<id>/) that holds events.jsonl")
    if _is_empty(journal):
        raise UsageError(f"{journal}: the journal is empty: the run never wrote an event; there is nothing "
                         "to report (a run's journal starts with run_started)")
    out = Path(args.out) if args.out else journal.parent
    if args.checkpoint:
        soak = write_soak_report(journal, out, live=True)
        print(f"wrote {', '.join(str(p) for p in soak)}")
        return 0
    if (ab := _ab_reports(journal, out)) is not None:
        print(f"wrote {', '.join(str(p) for p in ab)}")
        return 0
    # A soak's two reports fold in one pass over the journal (decoding it is most of the time).
    first = next(iter_journal(journal), None)
    soak_fold = SoakFold() if isinstance(first, RunStarted) and first.command == "soak" else None
    paths = write_reports(journal, out, also=(soak_fold.add,) if soak_fold is not None else ())
    prov = paths.report.provenance
    if prov.torn_line is not None:
        say(f"aqbench: warning: {journal}:{prov.torn_line.line}: torn last line skipped")
    if prov.finished_unix_ns is None:
        say(f"aqbench: warning: {journal}: no RunFinished, the run was interrupted; report marks it so")
    for row in paths.report.rows:
        stage = f" at {row.failed_stage}" if row.failed_stage else ""
        print(f"{row.model}: {row.status}{stage}")
    written = [paths.json, paths.markdown, paths.html]
    if prov.command == "soak":
        torn = TornLine(path=str(journal), line=t.line, text=t.text.encode()) if (t := prov.torn_line) else None
        written += list(write_soak_report(journal, out, report=soak_fold.report(torn) if soak_fold else None))
    if prov.command == "sweep":
        written += write_sweep_report(journal, out)
    print(f"wrote {', '.join(str(p) for p in written)}")
    return 0
