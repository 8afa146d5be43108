"""`aqbench` command line: argv -> one subcommand's run(); maps errors to exit codes. Composition root."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from orchestrator import __version__
from orchestrator.base.errors import AqbenchError
from orchestrator.commands import (
    ab,
    campaign,
    compare,
    config_check,
    dataset,
    doctor,
    ingest,
    inventory,
    ledger,
    publish,
    qualify,
    reference,
    report,
    run_aiperf,
    runs,
    serve_reference,
    soak,
    sweep,
)
from orchestrator.commands.grammar import deprecation_lines
from orchestrator.spine.stderr import choose_stderr, say

__all__ = ["main", "build_parser"]

# Each command module defines register(subparsers); listing order = help order. The modules are light:
# each imports what its command needs (adapters included) inside its run().
COMMAND_MODULES = [
    qualify,
    campaign,
    config_check,
    serve_reference,
    reference,
    inventory,
    report,
    compare,
    ab,
    dataset,
    ingest,
    soak,
    sweep,
    run_aiperf,
    doctor,
    ledger,
    publish,
    runs,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aqbench",
        description="Qualify and benchmark audio-language question-answering servers "
        "(trtmc-server or the embedded reference server) with AIPerf 0.13.0.",
    )
    parser.add_argument("--version", action="version", version=f"aqbench {__version__}")
    parser.add_argument("--log-format", choices=["console", "json"], default=None,
                        help="stderr log format (default: console on a terminal, json otherwise); with json, progress lines "
                             "are JSON records too (event \"say\"), so the stream holds one format")
    parser.add_argument("--log-level", default=None, choices=["debug", "info", "warning", "error"],
                        help="what stderr shows (default: warning on a terminal, where the live view owns the screen, "
                             "info otherwise); the run's aqbench.log keeps info and above")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


# Exit codes: 0 ok, 1 a verdict failed, 2 configuration or usage error, 3 the run itself failed, 130/143
# interrupted by SIGINT/SIGTERM. Subcommand modules may import adapters.
def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    # structlog (with rich and pygments: 0.15 CPU-s) loads where a command first logs (spine.logs applies this
    # choice then), not here: `aqbench ingest` of whole files never logs (bench/ingest.py measures its process).
    choose_stderr(fmt=args.log_format, level=args.log_level)
    for line in deprecation_lines(args):
        say(f"aqbench: warning: {line}")
    try:
        return int(args.func(args) or 0)
    except AqbenchError as exc:
        say(f"aqbench: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug, not a verdict: exit 3 ("the run itself failed"), never Python's 1
        # A run's own scope has already journaled Failed and RunFinished(error, 3) before this point.
        from orchestrator.spine.logs import get_logger

        get_logger("aqbench.cli").error("unexpected_error", error=repr(exc), exc_info=exc)
        say(f"aqbench: internal error: {type(exc).__name__}: {exc}; this is a bug in aqbench "
            f"(the run's journal and aqbench.log keep the details)")
        return 3
