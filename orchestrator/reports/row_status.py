"""Which models a qualify report lists and how each one ended, from its result or the stages it reached.

Pure; reads only values the fold already holds.
"""

from __future__ import annotations

from collections.abc import Mapping

from orchestrator.events import ModelResult, RunFinished

__all__ = ["chosen_models", "model_status", "soak_status", "StageState"]

# A stage as the fold saw it: (outcome, reason, finished).
StageState = tuple[str, str, bool]


def chosen_models(argv: list[str]) -> set[str]:
    """The models a `qualify --model NAME` run was asked for (empty: every configured one). The journal keeps
    the whole bench.toml, so the command line is what says the others were left out on purpose."""
    chosen = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--model"}
    return chosen | {a.removeprefix("--model=") for a in argv if a.startswith("--model=")}


def model_status(result: ModelResult | None, stages: Mapping[str, StageState],
                 finished: RunFinished | None) -> tuple[str, str, str]:
    """(status, failed stage, reason) of one model: its result where it has one; else not-run (never
    reached), interrupted (the run was), or error (the run ended before its result)."""
    if result is not None:
        stage = stages.get(result.failed_stage)
        return result.status, result.failed_stage, result.row.reason or (stage[1] if stage else "")
    if not stages:
        return "not-run", "", "the run ended before this model was reached"
    # The stage it stopped in: one left open, else the last one that failed.
    named = [(p, st) for p, st in reversed(list(stages.items())) if p != "model"]
    open_stage = next((p for p, st in named if not st[2]), "") or next((p for p, st in named if st[0] == "failed"), "")
    why = f": {finished.reason}" if finished is not None and finished.reason else ""
    if finished is None or finished.status == "interrupted":
        return "interrupted", open_stage, f"the run was interrupted before this model's result{why}"
    return "error", open_stage, f"the run ended before this model's result{why}"


def soak_status(stages: Mapping[str, StageState], final: Mapping[str, str]) -> tuple[str, str, str] | None:
    """A soak's model (its model phase ended `soak-...`): soak-failed, soak-inconclusive or soak-passed from
    its final verdicts (metric -> outcome; the phase's outcome where none was journaled). None: no soak."""
    outcome, _, _ = stages.get("model", ("", "", False))
    if not outcome.startswith("soak-"):
        return None
    failed = [k for k, v in final.items() if v == "fail"]
    undecided = [k for k, v in final.items() if v == "inconclusive"]
    if failed or (outcome == "soak-failed" and not final):
        return "soak-failed", "soak", stages.get("soak", ("", "", False))[1] or f"failed: {', '.join(failed)}"
    if undecided:
        return "soak-inconclusive", "", f"inconclusive (the evidence cannot decide): {', '.join(undecided)}"
    return "soak-passed", "", ""
