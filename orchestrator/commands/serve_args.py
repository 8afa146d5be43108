"""`--serve [HOST:]PORT`, `--serve-public` and `--serve-linger`, shared by the commands of long runs (soak,
qualify, campaign, sweep)."""

from __future__ import annotations

import argparse
import sys

from orchestrator.base.errors import UsageError
from orchestrator.config.flags import duration_or_zero_arg
from orchestrator.live.address import ServeAddress, parse_serve

__all__ = ["add_serve_arguments", "serve_address", "LINGER_ON_TERMINAL_S"]

# After the run on a terminal, the page stays this long by default: a person has time to look at the verdicts.
# Off a terminal it goes at once, so that a script gets its exit code.
LINGER_ON_TERMINAL_S = 300.0


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--serve", metavar="[HOST:]PORT", default="",
                   help="serve a live, read-only page of the run at http://HOST:PORT/ (host 127.0.0.1 unless given; "
                        "port 0 picks a free one); its URL is printed when it listens; redacted as `aqbench publish` "
                        "would")
    p.add_argument("--serve-public", action="store_true",
                   help="allow --serve on an address other than loopback (the page is then reachable from other machines)")
    p.add_argument("--serve-linger", type=duration_or_zero_arg, metavar="DURATION", default=None,
                   help="after the run, keep the page up this long with the final state, e.g. 10m, or 0 (default: "
                        f"{LINGER_ON_TERMINAL_S / 60:g}m on a terminal, 0 off one; Ctrl-C ends it sooner)")


def serve_address(args: argparse.Namespace) -> ServeAddress | None:
    """The address `--serve` names (None without it); UsageError when it is not one or needs --serve-public."""
    if not args.serve:
        if args.serve_public:
            raise UsageError("--serve-public needs --serve [HOST:]PORT (the address to serve the live page at)")
        if args.serve_linger is not None:
            raise UsageError("--serve-linger needs --serve [HOST:]PORT (the live page to keep up after the run)")
        return None
    return parse_serve(args.serve, public=args.serve_public, linger_s=_linger_s(args.serve_linger))


def _linger_s(value: float | None) -> float:
    if value is None:
        return LINGER_ON_TERMINAL_S if sys.stderr.isatty() else 0.0
    return value
