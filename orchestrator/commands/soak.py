"""`aqbench soak`: keep one supervised server under consecutive AIPerf windows and judge leaks and drift."""

from __future__ import annotations

import argparse
import sys

from orchestrator.commands.grammar import add_strict_argument, duration_arg
from orchestrator.commands.keep_args import add_keep_inputs_argument, with_keep_inputs
from orchestrator.commands.load_args import add_model_arguments, check_positive
from orchestrator.commands.serve_args import add_serve_arguments, serve_address

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("soak", help="long-running load with drift, leak, error-rate and restart verdicts",
                       description="Runs one supervised server under uninterrupted AIPerf load (one AIPerf process "
                       "for the whole soak, runs/<id>/aiperf/), cut into windows by time, journals per-window "
                       "aggregates and verdicts at every window's close, and writes runs/<id>/report.{json,md,html} and "
                       "soak.{json,md,html}. Before the load it runs qualify's capability probe: a server that cannot answer "
                       "audio questions ends the soak there (exit 1). A verdict decided at a window's close (memory, "
                       "error rate, restarts; judged stricter per look) halts the load and ends the soak "
                       "(--no-stop-early runs the whole duration). SIGINT ends the load gracefully and still writes "
                       "the report. "
                       "Memory (server, aqbench, AIPerf) is judged on every sample after [soak] warmup_s; before "
                       "the load the soak says what each trend verdict can decide. "
                       "Each verdict is PASS, FAIL or INCONCLUSIVE: inconclusive means the evidence cannot decide "
                       "(too short a judged span, too few judged windows, too few samples for a tail quantile: "
                       "[soak] min_trend_span_s, min_trend_windows) and names what is missing; inconclusive verdicts are "
                       "listed at the end of the run and at the top of soak.md. Exit 0 when no verdict failed "
                       "(inconclusive ones included, unless --strict), 1 when one failed, 2 on configuration "
                       "errors, 3 when the run itself failed, 130/143 when interrupted.")
    add_model_arguments(p, verb="soak")
    p.add_argument("--duration", type=duration_arg, metavar="DURATION",
                   help="total soak time, e.g. 8h, 90m (default: [soak] duration_s)")
    p.add_argument("--window", type=duration_arg, metavar="DURATION",
                   help="length of one window, e.g. 5m (default: [soak] window_s)")
    load = p.add_mutually_exclusive_group()
    load.add_argument("--rate", type=float, metavar="R", help="open-loop request rate per second")
    load.add_argument("--concurrency", type=int, metavar="C", help="closed-loop concurrent requests")
    add_strict_argument(p, "verdict")
    p.add_argument("--no-stop-early", dest="stop_early", action="store_false",
                   help="run the whole duration: by default a verdict decided at a window's close (memory growth, "
                        "error rate, restarts, judged at a stricter level per look) halts the load and ends the soak")
    add_serve_arguments(p)
    add_keep_inputs_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `aqbench --help` and the light commands must not load the soak loop.
    import msgspec

    from orchestrator.config import load_config
    from orchestrator.live.start import serve_live
    from orchestrator.run import run_main
    from orchestrator.soak import SoakOptions, soak

    cfg = with_keep_inputs(load_config(args.config), args)
    serve = serve_address(args)
    check_positive(args.rate, "--rate", "requests per second")
    check_positive(args.concurrency, "--concurrency", "concurrent requests")
    opts = SoakOptions(
        duration_s=args.duration, window_s=args.window,
        request_rate=args.rate, concurrency=args.concurrency, model=args.model, argv=sys.argv,
        strict=args.strict, stop_early=args.stop_early)
    # Imported here: the adapters (through wiring) load only once the command line is known to be good.
    from orchestrator.commands.wiring import real_toolkit

    toolkit = real_toolkit()
    return run_main(lambda interrupt: serve_live(serve, interrupt, lambda page: soak(
        cfg, msgspec.structs.replace(opts, serve=page), interrupt, toolkit)))
