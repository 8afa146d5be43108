"""The flags every command spells alike (docs/cli.md): `--config`, the model's `NAME`, `--json`, `--out`,
`--strict`, and the deprecation lines of old spellings."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from orchestrator.base.errors import UsageError
from orchestrator.config.flags import add_deprecated_alias, deprecation_lines, duration_arg

__all__ = ["DEFAULT_CONFIG", "add_config_argument", "add_model_argument", "add_json_argument",
           "add_strict_argument", "add_match_timeout_argument", "json_target", "config_given", "config_explicit", "add_deprecated_alias", "deprecation_lines",
           "duration_arg"]


DEFAULT_CONFIG = "bench.toml"


class _ConfigPath(argparse.Action):
    """Stores `--config PATH` and notes that it was named: an optional-use command reads bench.toml only
    where it exists, and a named file must exist."""

    # argparse.Action.__call__'s own signature (typeshed's), values as argparse parsed them.
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, self.dest + "_named", True)


def add_config_argument(p: argparse.ArgumentParser, *, optional_use: str = "", dest: str = "config") -> argparse.Action:
    """`--config PATH`, default bench.toml everywhere; `optional_use` says what the file is read for where the
    command also works without it."""
    why = f"; read only if it exists, for {optional_use}" if optional_use else ""
    return p.add_argument("--config", dest=dest, action=_ConfigPath, default=DEFAULT_CONFIG, metavar="PATH",
                          help=f"configuration file (default: bench.toml{why})")


def config_given(args: argparse.Namespace, dest: str = "config") -> str | None:
    """The configuration file an optional-use command reads: the one named, or bench.toml where it exists."""
    path: str = getattr(args, dest)
    return path if config_explicit(args, dest) or os.path.exists(path) else None


def config_explicit(args: argparse.Namespace, dest: str = "config") -> str | None:
    """The configuration file named on the command line, None when `--config` was left at its default."""
    return getattr(args, dest) if getattr(args, dest + "_named", False) else None


def add_model_argument(p: argparse.ArgumentParser, text: str, *, many: bool = False) -> argparse.Action:
    """`--model NAME`: one of the configuration's [[models]] (repeatable where `many`); `text` is its help."""
    if many:
        return p.add_argument("--model", action="append", default=[], metavar="NAME", help=text)
    return p.add_argument("--model", default="", metavar="NAME", help=text)


def add_json_argument(p: argparse.ArgumentParser, what: str) -> argparse.Action:
    """`--json [FILE.json]`: `what` as JSON, on standard output alone or with `-`, else into FILE.json."""
    return p.add_argument("--json", nargs="?", const="-", default="", metavar="FILE.json",
                          help=f"write {what} as JSON: to standard output (alone or '-'), or to FILE.json")


def json_target(value: str) -> str:
    """The `--json` target, refused unless `-` or a .json file (so it never eats an argument meant for another)."""
    if value and value != "-" and not value.endswith(".json"):
        raise UsageError(f"--json {value}: give a FILE.json, '-' or nothing (standard output); "
                         f"put --json after the other arguments when it is to print")
    return value


def add_match_timeout_argument(p: argparse.ArgumentParser) -> argparse.Action:
    """`--match-timeout DURATION` (old spelling `--match-timeout-s`): how long one half of a request waits."""
    action = p.add_argument("--match-timeout", type=duration_arg, default=5.0, metavar="DURATION",
                            help="how long a request's half waits for the other half (default 5s)")
    add_deprecated_alias(p, "--match-timeout-s", action)
    return action


def add_strict_argument(p: argparse.ArgumentParser, what: str = "figure") -> argparse.Action:
    """`--strict`: an inconclusive verdict fails the command (exit 1) as a failed one does."""
    return p.add_argument("--strict", action="store_true",
                          help=f"exit 1 when any {what} is inconclusive, not only when one fails")
