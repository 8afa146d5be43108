"""`aqbench qualify`: qualify every configured model (default: the embedded reference server)."""

from __future__ import annotations

import argparse
import sys

from orchestrator.base.errors import UsageError
from orchestrator.commands.grammar import add_config_argument, add_model_argument
from orchestrator.commands.keep_args import add_keep_inputs_argument, with_keep_inputs
from orchestrator.commands.serve_args import add_serve_arguments, serve_address

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("qualify", help="qualify every configured model: capability, correctness, identity, AIPerf",
                       description="Runs each model in bench.toml through server start, capability probe, family "
                       "correctness, native/HTTP identity and a real AIPerf run; writes runs/<id>/report.{json,md,html}. "
                       "Exit 0 when every model is aiperf-qualified, 1 otherwise, 2 on configuration errors, 3 when "
                       "the run itself failed, 130/143 when interrupted by SIGINT/SIGTERM.")
    add_config_argument(p)
    add_model_argument(p, "qualify only this configured model (repeatable)", many=True)
    p.add_argument("--plan", action="store_true", help="journal every selected model as planned and run nothing")
    p.add_argument("--skip-aiperf", action="store_true", help="stop after native/HTTP identity (no AIPerf stage)")
    p.add_argument("--trtmc", default="", metavar="PATH",
                   help="a TensorRT-Model-Connect checkout: judge each model that has a [models.reference] by the "
                        "owners' gates in apps/aiperf_qual/config (tasks.yaml, models/<profile>.yaml)")
    p.add_argument("--rev", default="", metavar="REV", help="read the --trtmc files at this git revision")
    add_serve_arguments(p)
    add_keep_inputs_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `aqbench --help` and the light commands must not load qualify and the
    # adapters (through wiring).
    import msgspec

    from orchestrator.commands.owner_files import owner_files
    from orchestrator.commands.wiring import real_toolkit
    from orchestrator.config import load_config
    from orchestrator.live.start import serve_live
    from orchestrator.qualify import QualifyOptions, qualify
    from orchestrator.run import run_main

    cfg = with_keep_inputs(load_config(args.config), args)
    serve = serve_address(args)
    if args.rev and not args.trtmc:
        raise UsageError("--rev REV needs --trtmc PATH (the checkout to read at that revision)")
    opts = QualifyOptions(models=args.model, plan_only=args.plan, skip_aiperf=args.skip_aiperf, argv=sys.argv,
                          owners=owner_files(cfg, args.trtmc, args.rev))

    toolkit = real_toolkit()
    return run_main(lambda interrupt: serve_live(serve, interrupt, lambda page: qualify(
        cfg, msgspec.structs.replace(opts, serve=page), interrupt, toolkit)))
