"""`aqbench publish RUN_DIR... --out DIR`: what may be posted, private details replaced and scanned.
Exit 0 written and clean, 1 the final scan found private data (file, line and kind listed; nothing
written), 2 bad input."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.commands.grammar import add_config_argument, config_explicit, config_given

__all__ = ["register", "run"]



def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "publish",
        help="write the result rows, ledger, commands and a paste-ready comment, with private details replaced",
        description="Write into --out: comment.md (a Markdown comment ready to paste into the tracking issue), "
        "rows.json (the result rows, folded from each run's events.jsonl), commands.md (the reproducible "
        "commands), runs/<run_id>/events.jsonl (each run's journal, every event scrubbed, from which "
        "`aqbench report` rebuilds the reports) and, with --ledger, ledger.md and ledger.json. A result row made under "
        "another run key than the current one (the key --config gives now, else the newest keyed row of its model) is "
        "marked stale and never presented as current; the ledger does not count it. Paths become placeholders relative to named "
        "roots (<run-dir>, <venv>, <checkout>, <bundle-dir>, <dataset>, <trtmc>, <home>, and [publish] roots); host and "
        "user names become <host>/<user>, email addresses <email>; ports and temporary folders go; environment "
        "values outside [publish] allowed_env become <env>; credentials (by name, by shape such as hf_/sk-/ghp_/"
        "nvapi-/AKIA/JWT, or by entropy) become <redacted>. A final scan with its own detectors refuses to write "
        "anything if a credential, email address, this machine's host names, addresses or user names, a home, "
        "scratch or temporary path, or a folder outside the named roots remains. "
        "Exit codes: 0 written and clean, 1 the scan found private data (each file:line and kind listed, never "
        "the value; nothing written; do not post), 2 bad input (no journal, unreadable inventory or bench.toml), "
        "3 aqbench itself failed (a corrupt journal).",
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR",
                   help="run folders (qualify, run-aiperf); a campaign folder stands for each of its models' runs")
    p.add_argument("--out", required=True, metavar="DIR", help="where to write what may be posted")
    p.add_argument("--ledger", default="", metavar="INV.json",
                   help="also write the group ledger of these runs against this inventory (aqbench inventory --json)")
    p.add_argument("--no-journals", dest="journals", action="store_false",
                   help="do not copy the runs' journals (runs/<run_id>/events.jsonl); rows and comment only")
    add_config_argument(p, optional_use="its [publish] roots, names and allowed_env; named, its models' run keys "
                        "are current too, as for `aqbench ledger --config` (a row made under another key is marked "
                        "stale and not counted); not named, the newest keyed row of each model is the current key")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here: orchestrator.spine.logs loads structlog, which `aqbench --help` never needs.
    # Imported here, not at the top: publishing (redaction, the ledger) loads only for this command.
    from orchestrator.config import load_config
    from orchestrator.ledger import build_ledger, load_inventory, read_run, run_folders
    from orchestrator.publish.current import check_keys
    from orchestrator.publish.write import (
        gather_facts,
        render_publication,
        write_publication,
    )
    from orchestrator.runkey.current import current_keys
    from orchestrator.spine.logs import get_logger, say

    config_path = config_given(args)
    cfg = load_config(config_path) if config_path else None
    runs = [read_run(r) for r in run_folders(args.runs)]
    # Only a configuration named on the command line says which keys are current: ./bench.toml may be
    # another than the one the runs were made with.
    named = config_explicit(args)
    keys = current_keys(cfg) if cfg is not None and named is not None else None
    key_check = check_keys(runs, keys, config=Path(named).name if named else "")
    inventory = load_inventory(args.ledger) if args.ledger else None
    ledger = build_ledger(inventory, runs, keys=keys) if inventory is not None else None
    facts = gather_facts(runs, cfg.publish if cfg is not None else None, inventory)
    result = write_publication(render_publication(runs, ledger, journals=args.journals, keys=key_check), args.out,
                               facts)
    log = get_logger("publish")
    if result.findings:
        for finding in result.findings:
            say(f"aqbench: private: {Path(args.out) / finding.file}:{finding.line}: {finding.kind}"
                + (f" ({finding.excerpt})" if finding.excerpt else ""))
        say(f"aqbench: error: {len(result.findings)} private details would remain in {args.out}; nothing was "
            "written. Add the folders to [publish] roots or the names to [publish] names in bench.toml, or remove "
            "the credential from the run's inputs, and run again.")
        log.warning("publish_refused", findings=len(result.findings))
        return 1
    for path in result.files:
        print(f"wrote {path}")
    for stale in key_check.stale:  # published, marked: never presented as current
        say(f"aqbench: stale, not counted: {stale.run_id} {stale.model}: {stale.note}")
    log.info("publish_done", files=len(result.files), runs=len(runs))
    return 0
