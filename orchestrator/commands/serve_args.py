"""`--serve [HOST:]PORT` and `--serve-public`, shared by the commands of long runs (soak, qualify, campaign, sweep)."""

from __future__ import annotations

import argparse

from orchestrator.errors import UsageError
from orchestrator.live.address import ServeAddress, parse_serve

__all__ = ["add_serve_arguments", "serve_address"]


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--serve", metavar="[HOST:]PORT", default="",
                   help="serve a live, read-only page of the run at http://HOST:PORT/ (host 127.0.0.1 unless given; "
                        "port 0 picks a free one, logged at the start); redacted as `aqbench publish` would")
    p.add_argument("--serve-public", action="store_true",
                   help="allow --serve on an address other than loopback (the page is then reachable from other machines)")


def serve_address(args: argparse.Namespace) -> ServeAddress | None:
    """The address `--serve` names (None without it); UsageError when it is not one or needs --serve-public."""
    if not args.serve:
        if args.serve_public:
            raise UsageError("--serve-public needs --serve [HOST:]PORT (the address to serve the live page at)")
        return None
    return parse_serve(args.serve, public=args.serve_public)
