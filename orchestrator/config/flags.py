"""Command-line spellings shared by every parser, aqbench's and the reference server's: durations that take
`90`, `90s`, `5m` or `8h`, and old flag names kept for one release, each noted when used."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from orchestrator.base.errors import ConfigError
from orchestrator.config.duration import parse_duration

__all__ = ["DURATION_EXAMPLES", "duration_arg", "duration_or_zero_arg", "add_deprecated_alias", "deprecation_lines"]

DURATION_EXAMPLES = ("90", "90s", "5m", "8h")  # what every duration flag accepts, in docs/cli.md and its test
_USED = "_deprecated_flags_used"  # where the namespace keeps the old spellings it met, for deprecation_lines


def duration_arg(text: str) -> float:
    """argparse type of a duration flag: `90` (seconds), `90s`, `5m`, `8h` -> seconds."""
    try:
        return parse_duration(text, what="duration")
    except ConfigError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive duration; use e.g. 90, 90s, 5m, 8h") from None


duration_arg.__name__ = "duration"  # argparse names the type in its refusal: "invalid duration value: 'x'"


def duration_or_zero_arg(text: str) -> float:
    """A duration flag where 0 (`0`, `0s`, `0m`) means none: `--serve-linger 0`."""
    return 0.0 if text.strip() in ("0", "0s", "0m", "0h") else duration_arg(text)


duration_or_zero_arg.__name__ = "duration"


class _DeprecatedAlias(argparse.Action):
    """An old spelling of a flag: does what the new one does, and notes that it was used."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, target: argparse.Action, switch: bool) -> None:
        super().__init__(option_strings, dest, nargs=0 if switch else target.nargs, const=target.const,
                         default=argparse.SUPPRESS, type=target.type,  # type: ignore[arg-type]
                         choices=target.choices,
                         help=argparse.SUPPRESS, metavar=target.metavar)
        self.target = target
        self.switch = switch

    # argparse.Action.__call__'s own signature (typeshed's), values as argparse parsed them.
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: str | Sequence[Any] | None,
                 option_string: str | None = None) -> None:
        used: list[tuple[str, str]] = getattr(namespace, _USED, [])
        used.append((option_string or self.option_strings[0], self.target.option_strings[0]))
        setattr(namespace, _USED, used)
        self.target(parser, namespace, self.const if self.switch else values, self.target.option_strings[0])


def add_deprecated_alias(p: argparse.ArgumentParser | argparse._ArgumentGroup, old: str, target: argparse.Action,
                         *, switch: bool = False) -> None:
    """Keep `old` working as `target`'s flag for one release (hidden from --help; noted when used).
    `switch`: the old flag took no value and stands for the new one given alone (its `const`)."""
    p.add_argument(old, dest=target.dest, action=_DeprecatedAlias, target=target, switch=switch)


def deprecation_lines(args: argparse.Namespace) -> list[str]:
    """One line per old spelling this command line used, naming the new one."""
    return [f"{old} is deprecated and goes in the next release; use {new}"
            for old, new in dict.fromkeys(getattr(args, _USED, []))]
