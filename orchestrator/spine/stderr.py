"""stderr's one format (console or JSON) and level, chosen once per command, and the lines said there for the
person running aqbench. Loads no structlog: a command that only says things (`aqbench ingest`) starts without it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime

import msgspec

__all__ = ["StderrChoice", "choose_stderr", "stderr_choice", "on_choice", "say"]

_encoder = msgspec.json.Encoder()


class StderrChoice(msgspec.Struct, frozen=True):
    """What stderr carries: `fmt` "console" or "json"; `level` the least log level it shows."""

    fmt: str
    level: str


_choice: StderrChoice | None = None
_listeners: list[Callable[[StderrChoice], None]] = []


def choose_stderr(*, fmt: str | None = None, level: str | None = None) -> StderrChoice:
    """Choose stderr's format and level. `fmt` None: console on a terminal, JSON otherwise; `level` None: warning
    on a terminal (the live view owns the screen), info otherwise. Whoever listens (spine.logs) applies it."""
    global _choice
    if fmt is None:
        fmt = "console" if sys.stderr.isatty() else "json"
    if level is None:
        level = "warning" if sys.stderr.isatty() else "info"
    _choice = StderrChoice(fmt=fmt, level=level)
    for apply in _listeners:
        apply(_choice)
    return _choice


def stderr_choice() -> StderrChoice | None:
    """The choice made, or None before the first."""
    return _choice


def on_choice(apply: Callable[[StderrChoice], None]) -> None:
    """Call `apply` with every choice from now on, and at once with the one already made (spine.logs configures
    structlog so, whether it loads before or after the command line is read)."""
    _listeners.append(apply)
    if _choice is not None:
        apply(_choice)


def say(text: str) -> None:
    """A line for the person running aqbench, on stderr in that stream's one format: as it is beside console
    logs, or as a JSON record (`"event": "say"`, the line in `text`) beside JSON logs. Blocks (a write)."""
    if _choice is not None and _choice.fmt == "json":
        now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        text = _encoder.encode({"text": text, "event": "say", "level": "info", "timestamp": now}).decode()
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
