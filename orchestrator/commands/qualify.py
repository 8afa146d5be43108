"""`aqbench qualify`: qualify every configured model (default: the embedded reference server)."""

from __future__ import annotations

import argparse
import sys

from orchestrator.commands.serve_args import add_serve_arguments, serve_address
from orchestrator.errors import UsageError

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("qualify", help="qualify every configured model: capability, correctness, identity, AIPerf",
                       description="Runs each model in bench.toml through server start, capability probe, family "
                       "correctness, native/HTTP identity and a real AIPerf run; writes runs/<id>/report.{json,md,html}. "
                       "Exit 0 when every model is aiperf-qualified, 1 otherwise, 2 on configuration errors, 3 when "
                       "the run itself failed, 130/143 when interrupted by SIGINT/SIGTERM.")
    p.add_argument("--config", default="bench.toml", help="configuration file (default: bench.toml)")
    p.add_argument("--model", action="append", default=[], metavar="NAME",
                   help="qualify only this configured model (repeatable)")
    p.add_argument("--plan", action="store_true", help="journal every selected model as planned and run nothing")
    p.add_argument("--skip-aiperf", action="store_true", help="stop after native/HTTP identity (no AIPerf stage)")
    p.add_argument("--trtmc", default="", metavar="PATH",
                   help="a TensorRT-Model-Connect checkout: judge each model that has a [models.reference] by the "
                        "owners' gates in apps/aiperf_qual/config (tasks.yaml, models/<profile>.yaml)")
    p.add_argument("--rev", default="", metavar="REV", help="read the --trtmc files at this git revision")
    add_serve_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `aqbench --help` and the light commands must not load qualify and the
    # adapters (through wiring).
    import msgspec

    from orchestrator.commands.wiring import owner_files, real_toolkit
    from orchestrator.config import load_config
    from orchestrator.live.start import serve_live
    from orchestrator.qualify import QualifyOptions, qualify
    from orchestrator.run import run_main

    cfg = load_config(args.config)
    serve = serve_address(args)
    if args.rev and not args.trtmc:
        raise UsageError("--rev REV needs --trtmc PATH (the checkout to read at that revision)")
    opts = QualifyOptions(models=args.model, plan_only=args.plan, skip_aiperf=args.skip_aiperf, argv=sys.argv,
                          owners=owner_files(cfg, args.trtmc, args.rev))

    toolkit = real_toolkit()
    return run_main(lambda interrupt: serve_live(serve, interrupt, lambda page: qualify(
        cfg, msgspec.structs.replace(opts, serve=page), interrupt, toolkit)))
