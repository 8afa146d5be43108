"""Two run journals in, one Comparison out: checks both halves are whole, diffs provenance, computes
each shared model's figures and derives the outcome and exit code. Writes nothing."""

from __future__ import annotations

from pathlib import Path

from orchestrator.base.errors import UsageError
from orchestrator.compare.figures import compare_model
from orchestrator.compare.load import RunSamples, load_run
from orchestrator.compare.provenance import provenance_diff
from orchestrator.compare.schema import Comparison, ModelComparison, RunRef
from orchestrator.config import CompareConfig
from orchestrator.spine.journal import journal_path
from orchestrator.supervision.host_summary import describe_host, summarize_host

__all__ = ["compare_runs", "journal_of"]


def journal_of(target: str | Path, side: str) -> Path:
    """The events.jsonl of a run folder (or the file itself); UsageError when there is none."""
    p = Path(target)
    if not p.exists():
        raise UsageError(f"{side} {p}: no such file or folder; pass a run folder (runs/<id>/) or its events.jsonl")
    journal = p if p.is_file() else journal_path(p)
    if not journal.is_file():
        raise UsageError(f"{side} {p}: a folder, but not a run's (no events.jsonl in it); pass a run folder "
                         f"(runs/<id>/) from `aqbench qualify` or `aqbench run-aiperf`")
    return journal


def _check_whole(run: RunSamples, side: str) -> None:
    if run.started is None:
        raise UsageError(f"{side} {run.journal}: not a run journal (no RunStarted line); pass the events.jsonl "
                         f"of a qualify or run-aiperf run")
    if run.finished is None:
        raise UsageError(f"{side} {run.journal}: the run is still in progress or was interrupted (its journal "
                         f"has no RunFinished); compare finished runs only, or wait for it to end")


# Commands whose runs compare with each other: both run AIPerf phases over the dataset's arms.
_PHASE_RUNS = frozenset({"qualify", "run-aiperf"})


def _check_kinds(base: RunSamples, cand: RunSamples) -> None:
    kinds = (base.started.command if base.started else "", cand.started.command if cand.started else "")
    if kinds[0] != kinds[1] and not set(kinds) <= _PHASE_RUNS:
        raise UsageError(f"baseline {base.journal.parent} is a {kinds[0]} run and candidate {cand.journal.parent} a "
                         f"{kinds[1]} run: runs of different kinds do not compare; compare two runs of one kind "
                         f"(qualify and run-aiperf runs compare with each other)")


def _ref(run: RunSamples) -> RunRef:
    s, f = run.started, run.finished
    return RunRef(journal=str(run.journal), run_id=s.run_id if s else "", command=s.command if s else "",
                  status=f.status if f else "in progress", started_unix_ns=s.ts_ns if s else None,
                  torn_line=run.torn.line if run.torn else None, host=summarize_host(run.host_samples))


def compare_runs(baseline: Path, candidate: Path, cfg: CompareConfig, *, model: str = "",
                 strict: bool = False) -> Comparison:
    """Compare two finished runs. Blocks (reads both journals; CPU-bound figures).

    Raises UsageError (exit 2) for a missing journal, a run without RunFinished, or no shared model.
    Incomparable runs (different datasets or workload settings) give outcome `refused`, exit code 2.
    """
    base, cand = load_run(baseline), load_run(candidate)
    _check_whole(base, "baseline")
    _check_whole(cand, "candidate")
    _check_kinds(base, cand)
    shared = [name for name in base.models if name in cand.models]
    if model:
        where = [side for side, run in (("baseline", base), ("candidate", cand)) if model in run.models]
        if len(where) < 2:
            names = sorted(set(base.models) | set(cand.models))
            raise UsageError(f"--model {model!r}: not in both runs (found in: {', '.join(where) or 'neither'}); "
                             f"models in both: {', '.join(shared) or 'none'}; in either: {', '.join(names) or 'none'}")
        shared = [model]
    if not shared:
        raise UsageError(f"no model ran in both runs (baseline: {', '.join(base.models) or 'none'}; candidate: "
                         f"{', '.join(cand.models) or 'none'}); compare runs of the same model")
    rows, refusals = provenance_diff(base, cand, shared)

    def result(outcome: str, exit_code: int, reason: str, *, refusals: list[str] | None = None,
               models: list[ModelComparison] | None = None) -> Comparison:
        return Comparison(outcome=outcome, exit_code=exit_code, reason=reason, baseline=_ref(base),  # type: ignore[arg-type]
                          candidate=_ref(cand), provenance=rows, refusals=refusals or [], models=models or [],
                          only_in_baseline=[n for n in base.models if n not in cand.models],
                          only_in_candidate=[n for n in cand.models if n not in base.models], strict=strict)

    if refusals:
        return result("refused", 2, "; ".join(refusals), refusals=refusals)
    models: list[ModelComparison] = [
        compare_model(base.models[name], cand.models[name], cfg=cfg,
                      deterministic=base.deterministic(name) and cand.deterministic(name))
        for name in shared]
    changes = [(m.model, f) for m in models for f in m.figures]
    regressed = [f"{name}: {f.name}" for name, f in changes if f.change == "regressed"]
    inconclusive = [f"{name}: {f.name}" for name, f in changes if f.change == "inconclusive"]
    # Runs taken apart in time: where a figure differs only within drift, name what the host was doing in each.
    host = "" if not any(f.note.startswith("differs, not attributable") for _n, f in changes) else (
        f"; differs, not attributable: host while each ran: baseline {describe_host(_ref(base).host)}; "
        f"candidate {describe_host(_ref(cand).host)}")
    if regressed:
        # The console prints "<outcome>: <reason>": the reason does not repeat the outcome word.
        return result("regressed", 1, f"{len(regressed)} figure(s) worse beyond tolerance: " + "; ".join(regressed),
                      models=models)
    if inconclusive:
        return result("inconclusive", 1 if strict else 0, f"no regression; {len(inconclusive)} figure(s) inconclusive"
                      + (" (--strict: exit 1)" if strict else "") + host, models=models)
    return result("no-regression", 0, "no regression; every figure unchanged or improved", models=models)
