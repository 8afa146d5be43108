"""`--keep-inputs`, shared by the commands that run AIPerf: keep its artifact folder as AIPerf wrote it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:  # the type only: `aqbench --help` does not load the configuration's Structs
    from orchestrator.config import Config

__all__ = ["add_keep_inputs_argument", "with_keep_inputs"]


def add_keep_inputs_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keep-inputs", action="store_true",
                   help="keep AIPerf's inputs.json (every payload, the audio in base64: tens of MB) and its raw "
                        "export unzipped; by default inputs.json gives way to a note of its size and hash "
                        "([workload] keep_inputs)")


def with_keep_inputs(cfg: Config, args: argparse.Namespace) -> Config:
    """`cfg` with [workload] keep_inputs on when `--keep-inputs` was given."""
    if not getattr(args, "keep_inputs", False):
        return cfg
    return msgspec.structs.replace(cfg, workload=msgspec.structs.replace(cfg.workload, keep_inputs=True))
