"""`aqbench ledger --inventory INV.json RUN_DIR...`: can the audio group close? Exit 0 yes, 1 no, 2 bad input."""

from __future__ import annotations

import argparse

from orchestrator.commands.grammar import add_config_argument, add_json_argument, config_explicit, json_target
from orchestrator.commands.output import write_output

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ledger",
        help="join the inventory with run results: can the group close?",
        description="One line per checkpoint of the inventory with its final status and where it comes from "
        "(a run's row with its run id, or the inventory's own unsupported/blocked verdict with its evidence); "
        "variants listed apart, never counted as models. Result rows are folded from each run's events.jsonl. "
        "A run made against another TRTMC revision than the inventory's, or with another dataset identity, is "
        "named and not counted; so is a row whose run key (digests of the model's configuration, dataset, bundle, server "
        "command, aqbench and AIPerf) is not the current one: the key --config gives now, else the newest row's. "
        "Exit codes: 0 the group can close, 1 it cannot (the blockers are listed), "
        "2 bad input (no inventory, not an inventory, a folder without events.jsonl), 3 aqbench itself failed (a "
        "corrupt journal).",
    )
    p.add_argument("--inventory", required=True, metavar="INV.json", help="written by `aqbench inventory --json`")
    p.add_argument("runs", nargs="*", metavar="RUN_DIR",
                   help="run folders (qualify, run-aiperf); a campaign folder stands for each of its models' runs")
    p.add_argument("--dataset-identity", default="", metavar="ID",
                   help="the dataset identity runs must have (default: the one most result rows used)")
    add_config_argument(p, optional_use="nothing unless named: the named file's models' run keys are current (it "
                        "reads the dataset, hashes the bundles); without it, the newest keyed row of each checkpoint")
    add_json_argument(p, "the ledger")
    p.add_argument("--markdown", default="", metavar="FILE",
                   help="write the Markdown ledger ('-' = stdout; the default when neither output is given)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: the ledger (and the inventory types it reads) load only for this command.
    from orchestrator.ledger import (
        build_ledger,
        ledger_json,
        ledger_markdown,
        load_inventory,
        read_run,
        run_folders,
    )
    from orchestrator.spine.logs import get_logger

    inv = load_inventory(args.inventory)
    keys = None
    if (named := config_explicit(args)) is not None:
        # Imported here: the run keys read the dataset and hash the bundles, only when --config asks for them.
        from orchestrator.config import load_config
        from orchestrator.runkey.current import current_keys

        keys = current_keys(load_config(named))
    ledger = build_ledger(inv, [read_run(r) for r in run_folders(args.runs)], dataset_identity=args.dataset_identity, keys=keys)
    if json_target(args.json):
        write_output(args.json, ledger_json(ledger))
    if args.markdown or not args.json:
        write_output(args.markdown or "-", ledger_markdown(ledger).encode())
    get_logger("ledger").info("ledger_done", checkpoints=len(ledger.lines), variants=len(ledger.variants),
                              runs=len(ledger.runs), can_close=ledger.can_close, blockers=len(ledger.blockers))
    return 0 if ledger.can_close else 1
