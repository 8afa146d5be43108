"""Options shared by the commands that load one served model (soak, sweep): its configuration file and model,
and the positive-number checks of their load flags."""

from __future__ import annotations

import argparse

from orchestrator.base.errors import UsageError
from orchestrator.commands.grammar import add_config_argument, add_model_argument

__all__ = ["add_model_arguments", "check_positive"]


def add_model_arguments(p: argparse.ArgumentParser, *, verb: str) -> None:
    """`--config` and `--model`: which bench.toml, and which of its [[models]] the command is to `verb`."""
    add_config_argument(p)
    add_model_argument(p, f"configured model to {verb} (default: the first)")


def check_positive(value: float | None, flag: str, unit: str) -> None:
    """UsageError when a flag given (not None) is zero or negative."""
    if value is not None and value <= 0:
        raise UsageError(f"{flag} {value:g}: must be a positive number of {unit}")
