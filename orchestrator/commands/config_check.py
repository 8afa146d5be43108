"""`aqbench config check [PATH]`: validate bench.toml and print the resolved configuration; `aqbench config
reference [--out FILE]`: write the configuration reference (docs/configuration.md) from config.py."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.base.errors import UsageError
from orchestrator.commands.grammar import add_config_argument, add_json_argument, config_explicit, json_target
from orchestrator.commands.output import write_output
from orchestrator.config import config_to_dict, load_config

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("config", help="inspect the configuration",
                       description="Exit 0 when the file is valid (or the reference was written), 2 on a configuration "
                       "or usage error (each problem named with its key), 3 when aqbench itself failed.")
    csub = p.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    check = csub.add_parser("check", help="validate bench.toml and print it resolved (paths absolute)")
    check.add_argument("path", nargs="?", default=None, help="configuration file (default: bench.toml)")
    # --config as in every other command, so the same command line habit works here.
    add_config_argument(check, dest="config_path")
    add_json_argument(check, "the resolved configuration (instead of TOML-like text)")
    check.set_defaults(func=run)
    ref = csub.add_parser("reference", help="print every bench.toml key with its type, default and meaning "
                          "(Markdown, as docs/configuration.md)")
    ref.add_argument("--out", default=None, metavar="FILE", help="write it to FILE instead of printing it")
    ref.set_defaults(func=run_reference)


def run(args: argparse.Namespace) -> int:
    named = config_explicit(args, "config_path")
    if args.path and named and args.path != named:
        raise UsageError(f"config check: two files given ({args.path!r} and --config {args.config_path!r}); give one")
    # Imported here: the dataset module (numpy, soundfile) loads only once the command line is known to be good.
    from orchestrator.dataset import resolve_dataset_path

    cfg = load_config(args.path or args.config_path)
    data = config_to_dict(cfg)
    # The folder a run will read, also when only [dataset] name is set (a shipped dataset).
    data["dataset"]["path"] = str(resolve_dataset_path(cfg.dataset).resolve())
    if json_target(args.json):
        write_output(args.json, msgspec.json.format(msgspec.json.encode(data), indent=2) + b"\n")
    else:
        print(f"# {cfg.source} (sha256 {cfg.sha256[:16]}) is valid")
        _print_toml(data)
    return 0


def run_reference(args: argparse.Namespace) -> int:
    # Imported here: orchestrator.spine.logs loads structlog, which `aqbench --help` never needs.
    # Imported here: the reference generator (every config Struct's docstrings) serves this command only.
    from orchestrator.config.doc import render_doc
    from orchestrator.spine.logs import say

    text = render_doc()
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"config reference --out {args.out}: cannot write: {exc.strerror}") from None
    say(f"wrote {args.out}")
    return 0


def _print_toml(data: dict[str, Any], prefix: str = "") -> None:  # config_to_dict's TOML-shaped data
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict | list) or
               (isinstance(v, list) and not any(isinstance(x, dict) for x in v))}
    for key, value in scalars.items():
        if key in ("source", "sha256"):
            continue
        print(f"# {key}: not set (default applies)" if value is None else f"{key} = {json.dumps(value)}")
    for key, value in data.items():
        if isinstance(value, dict) and key not in scalars:
            name = f"{prefix}{key}"
            print(f"\n[{name}]")
            _print_toml(value, prefix=f"{name}.")
        elif isinstance(value, list) and key not in scalars:
            for item in value:
                print(f"\n[[{prefix}{key}]]")
                _print_toml(item, prefix=f"{prefix}{key}.")
