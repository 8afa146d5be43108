"""`aqbench ingest PATH...`: read logs and records of earlier runs, join them, print what they say."""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import time
from typing import Any

from orchestrator.base.errors import UsageError
from orchestrator.commands.grammar import add_deprecated_alias, add_json_argument, json_target
from orchestrator.commands.output import write_output

__all__ = ["register", "run", "parse_time"]

_RELATIVE = re.compile(r"^-?(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_UNIT_NS = {"ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ingest",
        help="ingest journals, AIPerf exports, server records and JSON/text logs; join and summarise",
        description="Read aqbench journals, AIPerf profile_export(.raw).jsonl, trtmc-server/reference "
        "records, structlog/uvicorn JSON and plain-text logs (gzip/zstd too), join client and server "
        "records by request id and print a summary. Folders are walked for known names. Exit 0 when the summary "
        "was printed (--follow: after Ctrl-C too), 2 on a usage error or, with --fail-on-bad-line, a bad line (named by "
        "file:line), 3 when aqbench itself failed.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="file, glob, folder, or - for standard input")
    p.add_argument("--follow", action="store_true",
                   help="keep reading as files grow (like tail -F, across rotation and truncation); "
                   "Ctrl-C stops and prints the summary")
    p.add_argument("--out", metavar="FILE", help="write the normalised events as journal JSONL into FILE")
    p.add_argument("--parquet", metavar="FILE", help="write the correlated requests as a Parquet table")
    bad = p.add_argument("--fail-on-bad-line", action="store_true",
                         help="any bad line is an error (exit 2, names file:line)")
    add_deprecated_alias(p, "--strict", bad)
    p.add_argument("--since", metavar="T", help="keep events at or after T (ISO 8601, unix seconds, or 15m ago as -15m)")
    p.add_argument("--until", metavar="T", help="keep events before T (same forms as --since)")
    add_deprecated_alias(p, "--summary-json", add_json_argument(p, "the summary"), switch=True)
    p.set_defaults(func=run)


def parse_time(value: str, *, now_ns: int | None = None) -> int:
    """Unix ns of an ISO 8601 time, a unix timestamp (s/ms/us/ns by magnitude) or a relative
    `-15m` / `2h` (that long before now). Raises UsageError naming the value and the forms allowed."""
    # Imported here, not at the top: the log adapters load only for `aqbench ingest`.
    from adapters.logs.timestamps import parse_timestamp

    text = value.strip()
    match = _RELATIVE.match(text)
    if match:
        now = now_ns if now_ns is not None else time.time_ns()
        return now - int(float(match.group(1)) * _UNIT_NS[match.group(2)])
    try:
        number: Any = float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        number = text
    ns = parse_timestamp(number)
    if ns is None:
        raise UsageError(f"ingest: cannot read time {value!r}; use ISO 8601 (2024-05-01T12:00:00Z), "
                         "unix seconds (1714564800), or a relative -15m / -2h / -1d")
    return ns


def run(args: argparse.Namespace) -> int:
    # numpy's OpenBLAS would start a thread per core that spins for 0.04 CPU-s at import; ingest does no linear
    # algebra (bench/ingest.py measures the whole process). Before the imports below, which load numpy, and only
    # then (a process that has numpy already keeps its environment as it is).
    fresh = "numpy" not in sys.modules  # a process of its own (the command line), not a test calling run()
    enabled = gc.isenabled()
    if fresh:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        # No cyclic GC while the modules below load, and none walks them after (frozen: they live as long as
        # the process): its collections cost 8-13 ms of ingest's start (bench/ingest.py).
        gc.disable()
    # Imported here, not at the top: the ingest package and the log adapters load only for it, and not the
    # other commands' adapters (wiring.py): bench/ingest.py measures the whole process.
    from orchestrator.commands.log_codecs import log_codecs
    from orchestrator.ingest import Ingest, expand_inputs, gc_paused, new_joiner, write_parquet
    from orchestrator.ingest.render import render_summary
    from orchestrator.spine.stderr import say

    if fresh:
        gc.freeze()
        if enabled:
            gc.enable()
    json_target(args.json)
    since = parse_time(args.since) if args.since else None
    until = parse_time(args.until) if args.until else None
    if since is not None and until is not None and until <= since:
        raise UsageError(f"ingest: --until {args.until!r} is not after --since {args.since!r}")
    if args.follow and "-" in args.paths:
        raise UsageError("ingest: --follow cannot follow standard input; give files, globs or folders")
    out = open(args.out, "wb") if args.out else None  # noqa: SIM115  # the Ingest writes it; closed below
    codecs = log_codecs()
    # Without --parquet no RequestCorrelated is needed: the summary's join runs over columns.
    ingest = Ingest(new_joiner, codecs, since_ns=since, until_ns=until, strict=args.fail_on_bad_line, out=out,
                    keep_events=bool(args.parquet))

    def report() -> None:
        summary = ingest.finish()
        if args.parquet:
            write_parquet(ingest.correlated, args.parquet)
        if args.json not in ("", "-"):
            write_output(args.json, render_summary(summary, as_json=True).encode() + b"\n")
        print(render_summary(summary, as_json=args.json == "-"))

    try:
        if args.follow:
            # Imported here: the run scope (anyio, signals) and the follower serve --follow only.
            from orchestrator.ingest.follow import run_follow
            from orchestrator.run import run_main

            async def body(interrupt: object) -> int:
                try:
                    await run_follow(ingest, args.paths)
                finally:
                    report()  # synchronous: runs to the end even while the body is being cancelled
                return 0

            return run_main(body)
        # One pause of the cyclic GC for every file and the join: a collection between files would walk every
        # half kept so far (bench/ingest.py).
        with gc_paused():
            for path in expand_inputs(args.paths, known_name=codecs.is_known_name):
                ingest.feed_path(path)
            report()
        return 0
    finally:
        if out is not None:
            out.close()
            say(f"events written to {args.out}")
