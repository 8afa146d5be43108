"""`aqbench inventory`: audit a TRTMC checkout for the audio-QA workload; exit 0 when all is accounted for."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.config import load_config
from orchestrator.inventory import (
    ConfiguredModel,
    audit,
    read_probes,
    read_task_sources,
    read_tree,
    to_json,
    to_markdown,
)
from orchestrator.logs import get_logger

__all__ = ["register", "run"]

_DEFAULT_CONFIG = "bench.toml"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inventory",
        help="audit every audio-conditioned checkpoint of a TRTMC checkout",
        description="One row per checkpoint of the audio-conditioned group (plus bench.toml candidates) with "
        "its native capability class, status for the audio-QA workload, explicit gaps and evidence. "
        "Exit 0 when every checkpoint is accounted for, 1 otherwise.",
    )
    p.add_argument("--trtmc", required=True, metavar="PATH", help="TensorRT-Model-Connect checkout folder")
    p.add_argument("--rev", default="", metavar="REV",
                   help="audit this git revision (via git ls-tree / cat-file) instead of the working tree")
    p.add_argument("--config", default=None, metavar="PATH",
                   help=f"bench.toml for candidates and reconciliation (default: ./{_DEFAULT_CONFIG} if present)")
    p.add_argument("--probe", action="append", default=[], metavar="RUN_DIR",
                   help="merge the outcomes of a qualify run (its events.jsonl); repeatable")
    p.add_argument("--json", default="", metavar="OUT", help="write the inventory as JSON ('-' = stdout)")
    p.add_argument("--markdown", default="", metavar="OUT",
                   help="write the Markdown report ('-' = stdout; the default when neither output is given)")
    p.set_defaults(func=run)


def _write(target: str, data: bytes) -> None:
    if target == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def run(args: argparse.Namespace) -> int:
    log = get_logger("inventory")
    config_path = args.config
    if config_path is None and Path(_DEFAULT_CONFIG).is_file():
        config_path = _DEFAULT_CONFIG
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
    docs, source = read_tree(args.trtmc, args.rev)
    probes = [outcome for run_dir in args.probe for outcome in read_probes(run_dir)]
    inv = audit(docs, source=source, candidates=candidates, models=models, probes=probes, config_path=source_path,
                task_sources=read_task_sources(source))
    if args.json:
        _write(args.json, to_json(inv))
    if args.markdown or not args.json:
        _write(args.markdown or "-", to_markdown(inv).encode())
    log.info("inventory_done", commit=source.commit, checkpoints=len(inv.rows), variants=len(inv.variants),
             errors=len(inv.errors), accounted=inv.accounted)
    return 0 if inv.accounted else 1
