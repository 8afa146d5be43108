"""`aqbench runs [--keep N] [--older-than 7d] [--delete] [--force]`: list the run folders with their kind,
status and size, and prune them by count or age (a dry run unless `--delete`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from orchestrator.base.errors import UsageError
from orchestrator.commands.grammar import add_config_argument, config_given, duration_arg

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "runs", help="list the run folders (kind, status, size) and prune them by count or age",
        description="List every run folder under [run] output_dir, oldest first, with its kind, status and size "
        "(read from the first and last lines of its journal), and the clip cache's size. With --keep or "
        "--older-than, say which runs would be pruned and which clips of the cache no remaining run names; "
        "--delete removes them. A run still being written (no RunFinished and a live process) is never pruned "
        "unless --force. Exit 0 when listed (and pruned), 2 on a usage or configuration error, 3 when aqbench itself "
        "failed (a folder it could not read or remove).")
    add_config_argument(p, optional_use="[run] output_dir and clip_cache (else the defaults: runs/)")
    p.add_argument("--keep", type=int, default=None, metavar="N", help="prune all but the newest N runs")
    p.add_argument("--older-than", type=duration_arg, default=None, metavar="DURATION",
                   help="prune the runs started more than DURATION ago (90s, 30m, 8h, 7d)")
    p.add_argument("--delete", action="store_true",
                   help="remove what --keep/--older-than pick (without it, only say what would go)")
    p.add_argument("--force", action="store_true", help="prune runs still being written too")
    p.set_defaults(func=run)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `aqbench --help` and the other commands must not load the configuration.
    from orchestrator.config import RunConfig, load_config
    from orchestrator.dataset.clip_cache import ClipCache, clip_cache_dir
    from orchestrator.run.catalog import list_runs, plan_prune, prune

    path = config_given(args)
    cfg = RunConfig() if path is None else load_config(path).run
    if args.keep is not None and args.keep < 0:
        raise UsageError(f"--keep {args.keep}: give how many of the newest runs to keep (0 or more)")
    older = args.older_than
    pruning = args.keep is not None or older is not None
    if (args.delete or args.force) and not pruning:
        raise UsageError("--delete and --force act on the runs that --keep N or --older-than DURATION pick; "
                         "give one of them")
    root, cache = Path(cfg.output_dir), ClipCache(clip_cache_dir(cfg))
    entries = list_runs(root)
    if entries:
        print(f"{'run':<40} {'kind':<11} {'status':<12} {'started':<20} {'size':>10}")
    for e in entries:
        started = time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.started_unix_ns / 1e9))
        print(f"{e.run_id:<40} {e.kind:<11} {e.status:<12} {started} UTC {_mb(e.size_bytes):>10}")
    clips = cache.entries()
    clip_bytes = sum(p.stat().st_size for p in clips)
    print(f"{len(entries)} runs, {_mb(sum(e.size_bytes for e in entries))}; clip cache {cache.folder}: "
          f"{len(clips)} clips, {_mb(clip_bytes)}")
    if not pruning:
        return 0
    plan = plan_prune(entries, keep=args.keep, older_than_s=older, force=args.force)
    # Clips touched lately are spared while a run may be using them: one being written here, or any run of
    # another output_dir when [run] clip_cache is set (it may be shared).
    shared = bool(cfg.clip_cache)
    grace = 3600.0 if shared or any(e.live for e in entries) else 0.0
    done = prune(plan, root, cache, dry_run=not args.delete, cache_grace_s=grace)
    verb = "removed" if args.delete else "would remove"
    for e in done.runs:
        print(f"{verb} {e.path} ({e.kind}, {e.status}, {_mb(e.size_bytes)})")
    for e in plan.spared:
        print(f"kept {e.path}: still being written (--force prunes it)")
    print(f"{verb} {len(done.runs)} runs ({_mb(done.run_bytes)}) and {len(done.clips)} clips that no remaining "
          f"run names ({_mb(done.clip_bytes)})" + ("" if args.delete else "; pass --delete to remove them"))
    return 0
