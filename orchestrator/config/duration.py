"""Durations as users write them on the command line and in bench.toml."""

from __future__ import annotations

import re

from orchestrator.base.errors import ConfigError

__all__ = ["parse_duration"]

_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(text: str, *, what: str = "duration") -> float:
    """'8h', '5m', '30s', '250ms' or plain seconds -> seconds. Raises ConfigError naming `what`."""
    match = _DURATION_RE.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ConfigError(f"{what}: {text!r} is not a positive duration; use e.g. 30s, 5m, 8h")
    return float(match.group(1)) * _UNIT_S[match.group(2)]
