"""`aqbench ab --baseline A.toml --candidate B.toml`: did the candidate regress, measured interleaved?
Exit 0 no, 1 yes, 2 bad usage. Composition root: the real adapters go to orchestrator/ab/."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.commands.grammar import add_model_argument, add_strict_argument, duration_arg
from orchestrator.commands.keep_args import add_keep_inputs_argument, with_keep_inputs

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ab", help="interleaved A/B of two servers in one session, block-paired (exit 1 on a regression)",
        description="Serve the baseline and the candidate configs' servers in one session and alternate real "
        "AIPerf load between them in short blocks, in a seeded balanced order (ABBA BAAB ...), so that a "
        "machine's drift falls on both sides alike. Blocks are paired (one A, one B, back to back) and each "
        "latency figure (p50, p90, p99 and the tail share beyond each item's baseline p90) is decided from the "
        "pairs' changes with a t interval against the [compare] tolerances. After every pair from the third on, the "
        "session looks at the verdict and stops once a figure regressed or every figure is decided; the intervals are widened for the "
        "looks (a group-sequential boundary journaled in the plan), so peeking keeps the error rates. Writes ab.json, ab.md and ab.html into the "
        "run folder. Exit 0: no regression; 1: a figure regressed (or, with --strict, is inconclusive); 2: usage "
        "error (configs with different datasets or workloads, a bad flag); 3: the session itself failed (a server "
        "that would not start, an accounting breach); 130/143: interrupted by SIGINT/SIGTERM.")
    p.add_argument("--baseline", required=True, metavar="A.toml", help="the reference server's configuration")
    p.add_argument("--candidate", required=True, metavar="B.toml", help="the server under judgement")
    add_model_argument(p, "[[models]] name in both configs (default: each config's first)")
    p.add_argument("--pairs", type=int, default=6,
                   help="the most pairs of blocks (default 6; at least 3 to decide); the session stops sooner "
                   "once every figure is decided")
    p.add_argument("--boundary", choices=("obrien-fleming", "pocock"),  # orchestrator.ab.sequential.BOUNDARIES
                   default="obrien-fleming",
                   help="how the early stop spends the error over the looks: obrien-fleming (default) keeps the "
                   "last look almost as sharp as a fixed plan; pocock stops sooner on moderate changes")
    p.add_argument("--no-early-stop", action="store_true",
                   help="run every planned pair and decide once, at the fixed-size t")
    p.add_argument("--block-requests", type=int, default=40, help="profiling requests a block (default 40)")
    p.add_argument("--block-warmup", type=int, default=4, help="warmup requests a block, not counted (default 4)")
    p.add_argument("--seed", type=int, default=0, help="seed of the block order (default 0)")
    p.add_argument("--max-duration", type=duration_arg, default=None, metavar="DURATION",
                   help="start no pair that would end past this much session time, e.g. 90s, 5m "
                   "(default: run every planned pair)")
    servers = p.add_mutually_exclusive_group()
    servers.add_argument("--sequential", action="store_true",
                         help="run one server at a time (each block starts and stops its server) when two do not fit")
    servers.add_argument("--keep-servers", action="store_true",
                         help="keep both servers up for the whole session (for servers slow to load). By default both "
                         "run and are started afresh before every pair, so a difference between two server processes "
                         "falls on one pair, not on every pair alike")
    add_strict_argument(p)
    p.add_argument("--plan-noise", type=float, default=0.9, metavar="C",  # orchestrator.ab.power.PLAN_NOISE
                   help="the pair noise the plan's power statement assumes: sd of one pair's log p50 change times "
                   "sqrt(--block-requests) (default 0.9; ab.md shows each session's own after it ran). Before the "
                   "first block the plan says the smallest uniform slowdown it catches in 95 %% of sessions, and "
                   "whether a uniform +10 %% is among them")
    p.add_argument("--instance-allowance", type=float, default=0.0, metavar="F",  # orchestrator.ab.power.INSTANCE_ALLOWANCE
                   help="with --keep-servers (both servers running all session): what two identically configured "
                   "server processes may differ by (relative, default 0; 0.5 was measured in one real A/A with a CPU "
                   "hog on a shared 2-core host); every latency interval widens by it, so no figure reads improved or "
                   "regressed within it. Fresh servers every pair (the default) or every block need none")
    p.add_argument("--instance-tail-allowance", type=float, default=0.0, metavar="PT",  # power.INSTANCE_TAIL_ALLOWANCE
                   help="the same for the tail-share figures, in points (default 0; 0.5 covers a process 35-50 %% faster or "
                   "slower, which moves a tail share by -25 to +59 points)")
    add_keep_inputs_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here: orchestrator.spine.logs loads structlog, which `aqbench --help` never needs.
    # Imported here, not at the top: `aqbench --help` and the other commands never load the A/B session and
    # the adapters (through wiring).
    from orchestrator.ab import AbOptions, check_comparable, decide, run_ab_session, write_result
    from orchestrator.base.errors import UsageError
    from orchestrator.commands.wiring import real_toolkit
    from orchestrator.config import load_config
    from orchestrator.run import run_main
    from orchestrator.spine.logs import say

    if args.pairs < 1 or args.block_requests < 1 or args.block_warmup < 0 or args.plan_noise <= 0 \
            or args.instance_allowance < 0 or args.instance_tail_allowance < 0:
        raise UsageError(f"--pairs {args.pairs}, --block-requests {args.block_requests} must be at least 1, "
                         f"--block-warmup {args.block_warmup} at least 0, --plan-noise {args.plan_noise} positive and "
                         f"the instance allowances at least 0")
    if (args.instance_allowance or args.instance_tail_allowance) and not args.keep_servers:
        raise UsageError(f"--instance-allowance {args.instance_allowance:g} / --instance-tail-allowance "
                         f"{args.instance_tail_allowance:g}: an allowance is for servers kept up all session; pass "
                         f"--keep-servers with it, or leave it out (fresh servers every pair or block need none)")
    a, b = (with_keep_inputs(load_config(path), args) for path in (args.baseline, args.candidate))
    check_comparable(a, b, sequential=args.sequential)  # before any server or AIPerf starts
    opts = AbOptions(baseline=args.baseline, candidate=args.candidate, model=args.model, pairs=args.pairs,
                     block_requests=args.block_requests, block_warmup=args.block_warmup, seed=args.seed,
                     max_duration_s=args.max_duration, sequential=args.sequential, keep_servers=args.keep_servers,
                     boundary=args.boundary,
                     stop_early=not args.no_early_stop, strict=args.strict, plan_noise=args.plan_noise,
                     instance_allowance=args.instance_allowance, instance_tail_allowance=args.instance_tail_allowance)
    toolkit = real_toolkit()
    journals: list[Path] = []

    async def body(interrupt: object) -> int:
        journals.append(await run_ab_session(a, b, opts, interrupt, toolkit,  # type: ignore[arg-type]
                                             compare=a.compare))
        return 0

    code = run_main(body)
    if code != 0 or not journals:
        return code
    result = decide(journals[0])  # as `aqbench report` rebuilds it: the journaled [compare] and --strict
    paths = write_result(result, journals[0].parent)
    for f in result.figures:
        if f.change == "regressed":
            say(f"  regressed: {f.name}: [{(f.lower or 0) * 100:+.1f}, {(f.upper or 0) * 100:+.1f}] "
                f"{'%' if f.relative else 'pt'}")
    print(f"{result.outcome}: {result.reason}")
    print(f"wrote {paths[0]}, {paths[1]}, {paths[2]}")
    return result.exit_code
