"""`aqbench compare` of two sweeps (orchestrator/sweep/compare.py): the change in capacity."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.base.errors import UsageError

__all__ = ["run_if_sweeps"]


def run_if_sweeps(args: argparse.Namespace) -> int | None:
    """Compare two sweep runs and return the exit code; None when neither run is a sweep (the usual compare).
    One sweep against another kind of run is a usage error."""
    # Imported here: orchestrator.spine.logs loads structlog, which `aqbench --help` never needs.
    # Imported here, not at the top: the comparisons (and their judges) load only for `aqbench compare`.
    from orchestrator.compare import journal_of
    from orchestrator.spine.logs import say
    from orchestrator.sweep.compare import compare_sweeps, is_sweep, load_side, write_sweep_comparison

    baseline, candidate = journal_of(args.baseline, "baseline"), journal_of(args.candidate, "candidate")
    kinds = (is_sweep(baseline), is_sweep(candidate))
    if not any(kinds):
        return None
    if not all(kinds):
        sweep, other = (baseline, candidate) if kinds[0] else (candidate, baseline)
        raise UsageError(f"{sweep} is a sweep and {other} is not: a sweep compares only with another sweep")
    if args.model:
        raise UsageError("--model: a sweep serves one model; compare two sweeps without it")
    change = compare_sweeps(load_side(baseline), load_side(candidate), strict=args.strict)
    for side in (change.baseline, change.candidate):
        if side.torn_line is not None:
            say(f"aqbench: warning: {side.journal}:{side.torn_line}: torn last line skipped")
    if change.change == "not_comparable":  # the one difference is the whole story: said once, written only to --out
        if args.out:
            write_sweep_comparison(change, Path(args.out))
        say(f"aqbench: error: not comparable: baseline sweep {baseline.parent} and candidate sweep {candidate.parent}: "
            f"{change.reason}" + (f"; written to {args.out}" if args.out else
                                  "; nothing written (a refused comparison writes nothing into either run's folder)"))
        return change.exit_code
    paths = write_sweep_comparison(change, Path(args.out) if args.out else candidate.parent / "compare")
    print(f"capacity {change.change}: {change.reason}")
    print(f"wrote {paths[0]}, {paths[1]}")
    return change.exit_code
