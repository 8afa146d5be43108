"""`aqbench compare BASELINE_RUN CANDIDATE_RUN`: did the candidate regress (two sweeps: did its capacity change)?
Exit 0 no, 1 yes, 2 cannot say."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.base.errors import UsageError
from orchestrator.commands.grammar import add_config_argument, add_strict_argument, config_given
from orchestrator.config import CompareConfig, load_config

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compare",
        help="compare two finished runs figure by figure, with intervals (exit 1 on a regression)",
        description="Compare two runs (folders from `qualify` or `run-aiperf`) from their events.jsonl alone: "
        "latency quantiles, throughput, errors by cause, correctness, audio lift, completeness and answers item "
        "by item, each classified improved / regressed / unchanged / inconclusive against the [compare] "
        "tolerances. Writes compare.json, compare.md and compare.html. Exit 0: no regression; 1: a figure "
        "regressed (or, with --strict, is inconclusive); 2: usage error, a missing journal, a run without "
        "RunFinished, or runs that cannot be compared (different datasets or workload settings); 3: aqbench "
        "itself failed (a corrupt journal).",
    )
    p.add_argument("baseline", metavar="BASELINE_RUN", help="the reference run folder (or its events.jsonl)")
    p.add_argument("candidate", metavar="CANDIDATE_RUN", help="the run under judgement (folder or events.jsonl)")
    p.add_argument("--model", default="", metavar="NAME", help="compare only this model (default: every model in both)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="where to write the comparison (default: CANDIDATE_RUN/compare)")
    add_strict_argument(p)
    add_config_argument(p, optional_use="its [compare] tolerances (else the built-in ones)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: the comparison (and its judges) load only for this command.
    from orchestrator.compare import compare_runs, journal_of, refusal_paragraph, write_comparison, write_refusal
    from orchestrator.spine.logs import say

    if (code := _run_if_sweeps(args)) is not None:  # two sweeps: the change in capacity
        return code
    baseline, candidate = journal_of(args.baseline, "baseline"), journal_of(args.candidate, "candidate")
    config = config_given(args)
    tolerances = load_config(config).compare if config else CompareConfig()
    comparison = compare_runs(baseline, candidate, tolerances, model=args.model, strict=args.strict)
    for side in (comparison.baseline, comparison.candidate):
        if side.torn_line is not None:
            say(f"aqbench: warning: {side.journal}:{side.torn_line}: torn last line skipped")
    if comparison.outcome == "refused":  # said once, the full list in a file; nothing written into either run
        if args.out:  # a folder the user named: the whole comparison too, its provenance table included
            write_comparison(comparison, Path(args.out))
        listed = write_refusal(comparison, Path(args.out) if args.out else None)
        say("aqbench: error: " + refusal_paragraph(comparison, listed, in_temp=not args.out))
        return comparison.exit_code
    out = Path(args.out) if args.out else candidate.parent / "compare"
    paths = write_comparison(comparison, out)
    for m in comparison.models:
        counts = {k: sum(f.change == k for f in m.figures) for k in ("regressed", "improved", "unchanged", "inconclusive")}
        print(f"{m.model}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
        for f in m.figures:
            if f.change == "regressed":
                named = f" ({', '.join(f.items[:5])}{' ...' if len(f.items) > 5 else ''})" if f.items else ""
                print(f"  regressed: {f.name}{named}")
        if m.changed_answers:
            print(f"  {len(m.changed_answers)} answer(s) changed: "
                  + ", ".join(f"{a.path} {a.item_id}/{a.arm}" for a in m.changed_answers[:5])
                  + (" ..." if len(m.changed_answers) > 5 else ""))
    print(f"{comparison.outcome}: {comparison.reason}")
    print(f"wrote {paths[0]}, {paths[1]}, {paths[2]}")
    return comparison.exit_code


def _run_if_sweeps(args: argparse.Namespace) -> int | None:
    """Compare two sweep runs and return the exit code; None when neither run is a sweep (the usual compare).
    One sweep against another kind of run is a usage error."""
    # Imported here, not at the top: the comparisons (and their judges) load only for `aqbench compare`.
    from orchestrator.compare import journal_of
    from orchestrator.spine.logs import say
    from orchestrator.sweep.capacity_change import compare_sweeps, is_sweep, load_side, write_sweep_comparison

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
