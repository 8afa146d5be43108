"""`aqbench sweep`: the highest load at which every [slo] holds, answers included.

Composition root: parses the command line and hands the use (orchestrator/sweep/) the real adapters.
"""

from __future__ import annotations

import argparse
import sys

from orchestrator.commands.load_args import add_model_arguments, check_positive
from orchestrator.commands.serve_args import add_serve_arguments, serve_address

__all__ = ["register", "run"]

# Flags that override an [slo] key, by key.
_SLO_FLAGS = ("p99_latency_ms", "p90_latency_ms", "p99_model_call_ms", "max_error_rate")


def _points(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give comma-separated numbers, e.g. 0.5,1,2,4") from None


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("sweep", help="the capacity under [slo]: load points until an SLO breaks, answers checked",
                       description="Start the configured server once and run one AIPerf run per load point (open-loop "
                       "rates, or closed-loop concurrencies), lowest first, each accounted and correlated by request; "
                       "judge every point against [slo] (client p99/p90 latency, p99 model_call_ms, error rate, "
                       "answers equal to the concurrency-1 answers, complete outputs) and report the capacity: the "
                       "highest point that held every SLO and the lowest that broke one, in runs/<id>/sweep.{json,"
                       "md,html}. A point whose evidence cannot decide is rerun ([sweep] repeats), then said "
                       "undecided. qualify's capability probe runs first: a server that cannot do audio QA stops there. "
                       "Exit 0 when the capacity is bracketed or every point held, 1 when it is "
                       "undecided, the lowest point broke an SLO or the probe found no audio QA, 2 on configuration or usage errors, 3 when the "
                       "run itself failed (an accounting breach included), 130/143 when interrupted.")
    add_model_arguments(p, verb="sweep")
    load = p.add_mutually_exclusive_group()
    load.add_argument("--rates", type=_points, metavar="R,R,...", help="open-loop points, requests per second")
    load.add_argument("--concurrencies", type=_points, metavar="C,C,...", help="closed-loop points")
    p.add_argument("--requests-per-point", type=int, default=None, metavar="N",
                   help="profiling requests per point (default: [sweep] requests_per_point)")
    p.add_argument("--max-duration", metavar="DURATION", help="start no point after this much sweep time, e.g. 5m")
    for key in _SLO_FLAGS:
        p.add_argument("--" + key.replace("_", "-"), type=float, default=None, help=f"override [slo] {key}")
    p.add_argument("--match-timeout-s", type=float, default=5.0,
                   help="how long a request's half waits for the other half (default 5)")
    add_serve_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `aqbench --help` and the light commands must not load the sweep and the
    # adapters (through wiring).
    import msgspec

    from orchestrator.commands.wiring import real_toolkit
    from orchestrator.config import load_config, parse_duration
    from orchestrator.live.start import serve_live
    from orchestrator.run import run_main
    from orchestrator.sweep import SweepOptions, sweep

    cfg = load_config(args.config)
    serve = serve_address(args)
    check_positive(args.requests_per_point, "--requests-per-point", "requests")
    mode, points = ("rate", args.rates) if args.rates else ("concurrency", args.concurrencies) \
        if args.concurrencies else (None, None)
    opts = SweepOptions(model=args.model, mode=mode, points=points, requests_per_point=args.requests_per_point,
                        max_duration_s=parse_duration(args.max_duration, what="--max-duration")
                        if args.max_duration else None,
                        slo={k: v for k in _SLO_FLAGS if (v := getattr(args, k)) is not None},
                        argv=["aqbench", *sys.argv[1:]], match_timeout_s=args.match_timeout_s)
    toolkit = real_toolkit()
    return run_main(lambda interrupt: serve_live(serve, interrupt, lambda page: sweep(
        cfg, msgspec.structs.replace(opts, serve=page), interrupt, toolkit)))
