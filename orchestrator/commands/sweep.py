"""`aqbench sweep`: the highest load at which every [slo] holds, answers included.

Composition root: parses the command line and hands the use (orchestrator/sweep/) the real adapters.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: the sweep and its adapters load in run(), not for `aqbench --help`
    from orchestrator.config import Config
    from orchestrator.spine.ports import Toolkit
    from orchestrator.sweep import SweepOptions

from orchestrator.base.errors import UsageError
from orchestrator.commands.grammar import add_match_timeout_argument, duration_arg
from orchestrator.commands.keep_args import add_keep_inputs_argument, with_keep_inputs
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
    p.add_argument("--max-duration", type=duration_arg, metavar="DURATION",
                   help="start no point after this much sweep time, e.g. 90s, 5m")
    p.add_argument("--server-grid", metavar="KEY=V,V", default=None,
                   help="one sweep per value of a [server] setting (e.g. replicas=1,2), each its own run, then "
                        "grid.{json,md,html}: the capacity per configuration and per replica, and a Pareto chart")
    p.add_argument("--precision", type=float, default=None, metavar="F",
                   help="stop once the capacity's 90%% interval is within this relative half-width "
                        "(default: [sweep] precision, 0.10)")
    for key in _SLO_FLAGS:
        p.add_argument("--" + key.replace("_", "-"), type=float, default=None, help=f"override [slo] {key}")
    add_match_timeout_argument(p)
    add_serve_arguments(p)
    add_keep_inputs_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `aqbench --help` and the light commands must not load the sweep and the
    # adapters (through wiring).
    import msgspec

    from orchestrator.commands.wiring import real_toolkit
    from orchestrator.config import load_config
    from orchestrator.live.start import serve_live
    from orchestrator.run import run_main
    from orchestrator.sweep import SweepOptions, sweep

    cfg = with_keep_inputs(load_config(args.config), args)
    serve = serve_address(args)
    check_positive(args.requests_per_point, "--requests-per-point", "requests")
    mode, points = ("rate", args.rates) if args.rates else ("concurrency", args.concurrencies) \
        if args.concurrencies else (None, None)
    opts = SweepOptions(model=args.model, mode=mode, points=points, requests_per_point=args.requests_per_point,
                        max_duration_s=args.max_duration, precision=args.precision,
                        slo={k: v for k in _SLO_FLAGS if (v := getattr(args, k)) is not None},
                        argv=["aqbench", *sys.argv[1:]], match_timeout_s=args.match_timeout)
    toolkit = real_toolkit()
    if args.server_grid:
        if serve is not None:
            raise UsageError("--serve with --server-grid: the grid runs one sweep after another, each its own run; "
                             "serve the live page of one sweep at a time (drop --server-grid)")
        return _grid(cfg, opts, args.server_grid, toolkit)
    return run_main(lambda interrupt: serve_live(serve, interrupt, lambda page: sweep(
        cfg, msgspec.structs.replace(opts, serve=page), interrupt, toolkit)))


def _grid(cfg: Config, opts: SweepOptions, spec: str, toolkit: Toolkit) -> int:
    """One sweep per value of a [server] setting, one after another, each its own run; then the grid's report
    beside them. The exit code is the worst of the sweeps'."""
    # Imported here, not at the top, as in run(): `aqbench --help` must not load the sweep or its reports.
    from pathlib import Path

    from orchestrator.base.figures import figure
    from orchestrator.reports.sweep_grid import build_grid_report, write_grid_report
    from orchestrator.run import Interrupt, run_main
    from orchestrator.spine.journal import journal_path
    from orchestrator.spine.logs import say
    from orchestrator.sweep import sweep
    from orchestrator.sweep.grid import parse_grid, with_server_value

    key, values = parse_grid(spec)
    out = Path(cfg.run.output_dir)
    runs: list[tuple[str, Path]] = []
    codes = []
    for value in values:
        each = with_server_value(cfg, key, value)
        before = set(out.iterdir()) if out.is_dir() else set()
        say(f"sweep: [server] {key} = {value}")
        def one(interrupt: Interrupt, each: Config = each) -> Awaitable[int]:
            return sweep(each, opts, interrupt, toolkit)

        codes.append(run_main(one))
        made = sorted((p for p in out.iterdir() if p not in before and journal_path(p).is_file()),
                      key=lambda p: p.stat().st_mtime) if out.is_dir() else []
        if made:
            runs.append((value, made[-1]))
        if codes[-1] in (130, 143):
            break
    if runs:
        report = build_grid_report(runs, key)
        paths = write_grid_report(report, out / f"sweep-grid-{runs[0][1].name}")
        for e in report.entries:
            c = e.capacity
            ends = [figure(v) if v is not None else "open" for v in (e.per_replica_low, e.per_replica_high)]
            say(f"sweep grid: {key}={e.value}: " + (c.estimate or c.summary if c else "no capacity")
                + (f"; per replica {figure(e.per_replica)} [{ends[0]}, {ends[1]}]" if e.per_replica is not None
                   else ""))
        if report.host_note:
            say(f"sweep grid: {report.host_note}")
        say(f"  grid reports: {', '.join(str(p) for p in paths)}")
    return max(codes)
