"""How a soak ends: its exit code from the verdicts, its reports, and the lines it prints."""

from __future__ import annotations

from pathlib import Path

from orchestrator.judge.outcome import FAIL, INCONCLUSIVE, worst
from orchestrator.reports import write_reports
from orchestrator.reports.soak import write_soak_report
from orchestrator.soak.metric_verdict import MetricVerdict
from orchestrator.spine.logs import get_logger, say

__all__ = ["exit_code", "write_all_reports", "print_summary"]

log = get_logger("aqbench.soak")


def exit_code(verdicts: list[MetricVerdict], *, strict: bool) -> int:
    """0 when no verdict failed (inconclusive ones too, unless `strict`), else 1."""
    judged = worst(v.outcome for v in verdicts)
    return 1 if judged == FAIL or (strict and judged == INCONCLUSIVE) else 0


def write_all_reports(journal: Path, run_dir: Path) -> list[Path]:
    """The qualify-shaped report plus the soak report (pictures per window, verdict table). Blocks."""
    out: list[Path] = []
    try:
        p = write_reports(journal, run_dir)
        out += [p.json, p.markdown, p.html]
    except Exception as exc:  # the soak report must still be written when the shared one cannot be
        log.error("report_failed", error=str(exc))
    out += list(write_soak_report(journal, run_dir))
    return out


def print_summary(run_dir: Path, verdicts: list[MetricVerdict], paths: list[Path], *, strict: bool,
                  interrupted_by: str = "", interrupted_exit: int = 0) -> None:
    """The verdicts and the reports' paths on stderr; `interrupted_by` (a signal's name) when a signal ended the
    soak, which then exits `interrupted_exit` (128 + the signal) whatever the verdicts say."""
    say(f"\nsoak: {run_dir}")
    for v in verdicts:
        say(f"  {v.outcome.upper():12} {v.metric}: {v.reason[:300]}")
    undecided = [v.metric for v in verdicts if v.outcome == INCONCLUSIVE]
    if undecided:
        # Said last, where a reader looks first: these were neither passed nor failed.
        if interrupted_by:
            consequence = f"not failures; {interrupted_by} interrupted the soak, which exits {interrupted_exit}"
        elif strict:
            consequence = "--strict: the soak fails"
        else:
            consequence = "not failures (exit 0 unless a verdict failed; --strict makes them fail)"
        say(f"  INCONCLUSIVE: {', '.join(undecided)}: the evidence cannot decide; {consequence}")
    say(f"  reports: {', '.join(str(p) for p in paths)}")
