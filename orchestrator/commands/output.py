"""Where a command writes a file it was asked for: a path (folders made as needed) or '-' for stdout."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["write_output"]


def write_output(target: str, data: bytes) -> None:
    """Write `data` to `target`, or to standard output when `target` is '-'. Blocks."""
    if target == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
