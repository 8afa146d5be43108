"""`aqbench inventory`: audit a TRTMC checkout for the audio-QA workload, optionally against an older
inventory; exit 0 when all is accounted for and the group did not change."""

from __future__ import annotations

import argparse

from orchestrator.commands.grammar import add_config_argument, add_json_argument, config_given, json_target

__all__ = ["register", "run"]

_DEFAULT_CONFIG = "bench.toml"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "inventory",
        help="audit every audio-conditioned checkpoint of a TRTMC checkout",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="One row per checkpoint of the audio-conditioned group (plus bench.toml candidates) with "
        "its native capability class, status for the audio-QA workload, explicit gaps and evidence cited from the "
        "checkout's own files, in either layout (tests/e2e/models or families/). See docs/inventory.md.",
        epilog="exit codes:\n"
        "  0  every checkpoint accounted for; with --against, no checkpoint of the audio group (or candidate)\n"
        "     was added, removed, or changed in class or status\n"
        "  1  anything unreadable or unclassified (a manifest, a family's support.py or build file, an audio Task\n"
        "     not in the Task list); or, with --against, the group changed as above (moves in or out of the\n"
        "     considered list included)\n"
        "  2  usage error, or the checkout, revision or old JSON cannot be read\n"
        "  3  aqbench itself failed (a bug; the message names it)\n",
    )
    p.add_argument("--trtmc", required=True, metavar="PATH",
                   help="TensorRT-Model-Connect checkout folder (a bare repository is read at its HEAD)")
    p.add_argument("--rev", default="", metavar="REV",
                   help="audit this git revision (via git ls-tree / cat-file) instead of the working tree")
    p.add_argument("--against", default="", metavar="OLD.json",
                   help="reconcile with an older inventory JSON: list checkpoints added, removed, reclassified "
                   "and changed; exit 1 when a group checkpoint changed class or status")
    add_config_argument(p, optional_use="candidates and reconciliation")
    p.add_argument("--probe", action="append", default=[], metavar="RUN_DIR",
                   help="merge the outcomes of a qualify run (its events.jsonl); repeatable")
    add_json_argument(p, "the inventory")
    p.add_argument("--markdown", default="", metavar="FILE",
                   help="write the Markdown report ('-' = stdout; the default when no output is given)")
    p.add_argument("--html", default="", metavar="FILE", help="write the report as one HTML page")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here: the inventory package (HTML, probes, TRTMC tree readers) and structlog cost every other
    # command ~0.2 s and 0.15 s of start-up otherwise.
    from orchestrator.commands.output import write_output
    from orchestrator.config import load_config
    from orchestrator.inventory import (
        ConfiguredModel,
        audit,
        diff_inventories,
        diff_markdown,
        load_inventory,
        read_code_sources,
        read_probes,
        read_task_sources,
        read_tree,
        to_html,
        to_json,
        to_markdown,
    )
    from orchestrator.spine.logs import get_logger

    log = get_logger("inventory")
    config_path = config_given(args)
    candidates: list[str] = []
    models: list[ConfiguredModel] = []
    source_path = ""
    if config_path:
        cfg = load_config(config_path)
        source_path = cfg.source
        candidates = list(cfg.inventory.candidates)
        models = [ConfiguredModel(name=m.name, checkpoint=m.checkpoint, profile=m.profile, revision=m.revision,
                                  index=i, config_path=cfg.source) for i, m in enumerate(cfg.models)]
    else:
        log.warning("inventory_without_config", reason=f"no --config and no ./{_DEFAULT_CONFIG}: "
                    "no candidates and no reconciliation")
    old = load_inventory(args.against) if args.against else None
    docs, source = read_tree(args.trtmc, args.rev)
    if source.bare:
        log.info("inventory_bare_repository", root=source.root, commit=source.commit,
                 reason="a bare repository has no working tree: read at its HEAD (pass --rev for another)")
    probes = [outcome for run_dir in args.probe for outcome in read_probes(run_dir)]
    inv = audit(docs, source=source, candidates=candidates, models=models, probes=probes, config_path=source_path,
                task_sources=read_task_sources(source), code=read_code_sources(source))
    diff = diff_inventories(old, inv, args.against) if old is not None else None
    markdown = to_markdown(inv) + ("\n" + diff_markdown(diff) if diff is not None else "")
    if json_target(args.json):
        write_output(args.json, to_json(inv))
    if args.html:
        write_output(args.html, to_html(inv).encode())
    if args.markdown or not (args.json or args.html):
        write_output(args.markdown or "-", markdown.encode())
    log.info("inventory_done", commit=source.commit, checkpoints=len(inv.rows), variants=len(inv.variants),
             errors=len(inv.errors), accounted=inv.accounted,
             group_changed=None if diff is None else diff.group_changed)
    return 0 if inv.accounted and not (diff is not None and diff.group_changed) else 1
