"""`aqbench run-aiperf --config bench.toml`: one AIPerf phase against the configured server.

Composition root: parses the command line and hands the use (orchestrator/aiperf_phase/) the real adapters.
"""

from __future__ import annotations

import argparse
import sys

from orchestrator.commands.grammar import (
    add_config_argument,
    add_deprecated_alias,
    add_match_timeout_argument,
    add_model_argument,
)
from orchestrator.commands.keep_args import add_keep_inputs_argument, with_keep_inputs
from orchestrator.view.output import PlainOutput, ViewOutput

__all__ = ["register", "run", "choose_live_output"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run-aiperf", help="run one AIPerf phase against the configured server, with accounting",
                       description="Start the configured server, run one AIPerf phase over the dataset's arms with "
                       "live correlation and accounting, and write runs/<id>/report.{json,md,html}. Exit 0 when "
                       "AIPerf answered every request and the accounting balances, 1 when AIPerf's run was "
                       "partial, cancelled or failed, 2 on configuration or usage errors, 3 when the run itself "
                       "failed (an accounting breach included), 130/143 when interrupted by SIGINT/SIGTERM.")
    add_config_argument(p)
    add_model_argument(p, "[[models]] name to serve (default: the first)")
    p.add_argument("--requests", type=int, default=None, help="override workload.requests")
    p.add_argument("--warmup-requests", type=int, default=None, help="override workload.warmup_requests")
    p.add_argument("--concurrency", type=int, default=None, help="override workload.concurrency")
    rate = p.add_argument("--rate", type=float, default=None, metavar="R",
                          help="open-loop requests per second (default: workload.request_rate)")
    add_deprecated_alias(p, "--request-rate", rate)
    p.add_argument("--arms", default="", help="comma-separated arms (default: workload.arms)")
    add_match_timeout_argument(p)
    add_keep_inputs_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `aqbench --help` and the light commands must not load the adapters.
    from orchestrator.aiperf_phase import RunAiperfOptions, run_aiperf_phase
    from orchestrator.commands.wiring import real_toolkit
    from orchestrator.config import load_config
    from orchestrator.run import run_main

    cfg = with_keep_inputs(load_config(args.config), args)
    opts = RunAiperfOptions(model=args.model, requests=args.requests, warmup_requests=args.warmup_requests,
                            concurrency=args.concurrency, request_rate=args.rate,
                            arms=[a for a in args.arms.split(",") if a], match_timeout_s=args.match_timeout)
    toolkit = real_toolkit()
    live_output = choose_live_output()
    return run_main(lambda interrupt: run_aiperf_phase(cfg, opts, interrupt, toolkit, live_output=live_output))


def choose_live_output() -> ViewOutput:
    """The live line drawn in place by rich on a terminal, plain lines elsewhere."""
    if not sys.stderr.isatty():
        return PlainOutput(sys.stderr)
    # Imported here: rich (0.05 CPU-s) loads only where the line is drawn on a terminal.
    from orchestrator.view.terminal import LiveOutput

    return LiveOutput(sys.stderr)
