"""Whether a stopped server's output ends in a traceback that our own stop signal raised: the server handling
the stop it was asked for, not a crash. Decided once, at exit, and journaled on ServerExited.stop_traceback."""

from __future__ import annotations

import signal

__all__ = ["stop_traceback"]

_HEADER = "Traceback (most recent call last):"
# Exceptions a stop signal raises in a Python server, by signal; CancelledError is the asyncio tasks the
# interrupt cancelled on its way out.
# Uvicorn (any asyncio program) turns SIGINT into KeyboardInterrupt, which unwinds with a traceback; SIGTERM's
# default handler prints none, but a program may turn it into SystemExit.
_RAISED_BY = {
    signal.SIGINT: ("KeyboardInterrupt", "asyncio.exceptions.CancelledError", "CancelledError"),
    signal.SIGTERM: ("SystemExit", "asyncio.exceptions.CancelledError", "CancelledError"),
}


def stop_traceback(tail: list[str], sig: signal.Signals) -> str:
    """The exception line of the last traceback in `tail` when `sig` raised it (e.g. "KeyboardInterrupt"), else
    "" (no traceback, or one that ends in another exception: that one stays unexplained)."""
    starts = [i for i, line in enumerate(tail) if line.strip() == _HEADER]
    if not starts:
        return ""
    # The exception line is the first unindented line after the frames (log lines may follow it).
    line = next((x.strip() for x in tail[starts[-1] + 1:] if x.strip() and not x[:1].isspace()), "")
    name = line.split(":", 1)[0].strip()
    return line if name in _RAISED_BY.get(sig, ()) else ""
