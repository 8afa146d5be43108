"""Completeness in the report: a line per model and path, each defect counted, each incomplete answer listed
beside its verdict, in report.json, report.md and report.html; and the soak tracker's load answers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec

from orchestrator.config import CorrectnessCriteria
from orchestrator.dataset import load_dataset
from orchestrator.events import (
    AnswerIncomplete,
    AnyEvent,
    CapabilityPhase,
    ModelResult,
    PhaseFinished,
    PhaseStarted,
    RequestCorrelated,
    VerdictReached,
)
from orchestrator.reports import fold
from orchestrator.reports.html import render_html
from orchestrator.reports.markdown import render_markdown
from orchestrator.reports.windows import pass_rate
from orchestrator.soak.tracker import SoakTracker

DATASET = Path(__file__).resolve().parents[3] / "datasets" / "audioqa-v1"


def _stamp(events: list[Any]) -> list[AnyEvent]:
    return [msgspec.structs.replace(e, run_id="r", seq=i + 1, ts_ns=1_700_000_000_000_000_000 + i * 1000)
            for i, e in enumerate(events)]


def _journal() -> list[AnyEvent]:
    m = "defective"
    ev: list[Any] = [PhaseStarted(phase="model", model=m), PhaseStarted(phase="capability", model=m),
                     AnswerIncomplete(model=m, path="capability", defects=["empty"], details=["no answer"],
                                      item_id="i1", arm="audio", request_id="aqb-cap-1", answer=""),
                     PhaseFinished(phase="capability", model=m, outcome="passed", detail=CapabilityPhase(answers_checked=6)),
                     PhaseStarted(phase="correctness", model=m)]
    for n, item in enumerate(("i1", "i2", "i3")):
        rid = f"aqb-http-{n}"
        if item == "i2":
            ev.append(AnswerIncomplete(model=m, path="http", defects=["length_limit", "repetition"],
                                       details=["finish_reason is length", "'3' repeated 5 times in a row"],
                                       item_id=item, arm="audio", request_id=rid, answer="3 3 3 3 3",
                                       finish_reason="length"))
        ev.append(VerdictReached(model=m, item_id=item, arm="audio", path="http",
                                 verdict="incomplete" if item == "i2" else "correct", request_id=rid,
                                 answer="3 3 3 3 3" if item == "i2" else "3"))
    ev.append(VerdictReached(model=m, item_id="i3", arm="silence", path="http", verdict="error", request_id="x"))
    ev += [PhaseFinished(phase="correctness", model=m, outcome="failed", reason="1 incomplete answers"),
           ModelResult(model=m, status="failed", failed_stage="correctness"),
           PhaseFinished(phase="model", model=m, outcome="failed")]
    return _stamp(ev)


def test_report_has_a_completeness_line_per_path_with_defects_and_items_beside_verdicts() -> None:
    report = fold(_journal())
    row = report.rows[0]
    lines = {c.path: c for c in row.completeness}
    assert list(lines) == ["capability", "http"]
    cap, http = lines["capability"], lines["http"]
    assert (cap.checked, cap.complete, cap.defects) == (6, 5, {"empty": 1})
    # The error verdict (no answer at all) is not an answer to check.
    assert (http.checked, http.complete, http.defects) == (3, 2, {"length_limit": 1, "repetition": 1})
    [item] = http.items
    assert (item.item_id, item.request_id, item.verdict) == ("i2", "aqb-http-1", "incomplete")
    assert item.defects == ["length_limit", "repetition"]
    assert cap.items[0].verdict == ""  # probes are not scored
    assert row.correctness["http"].by_arm["audio"].incomplete == 1
    assert row.correctness["http"].by_arm["audio"].correct == 2
    md = render_markdown(report)
    assert "| http | 3 | 2 | length_limit 1, repetition 1 |" in md
    assert "| capability | 6 | 5 | empty 1 |" in md
    assert "aqb-http-1" in md and "finish_reason is length" in md
    html = render_html(report)
    assert "Completeness via" in html and "aqb-http-1" in html and "length_limit 1, repetition 1" in html


def test_a_complete_path_reads_complete() -> None:
    events = [e for e in _journal() if not isinstance(e, AnswerIncomplete)]
    md = render_markdown(fold(_stamp(events)))
    assert "| capability | 6 | 6 | complete |" in md
    assert "Incomplete answers" not in md


def test_incomplete_is_counted_in_pass_rates_and_never_correct() -> None:
    from collections import Counter

    rate = pass_rate(Counter({"correct": 1, "incomplete": 1}))
    assert (rate.total, rate.correct, rate.incomplete, rate.rate) == (2, 1, 1, 0.5)


def test_soak_tracker_journals_load_answers_that_are_not_whole() -> None:
    """Under load the count from the server record against the limit AIPerf sent tells truncation, and
    an answer that echoes the question is named; both are incomplete, never correct."""
    ds = load_dataset(DATASET)
    item = ds.item("content-meeting-hour")
    model = SimpleNamespace(correctness=CorrectnessCriteria(min_pass_rate=0.5), name="m")
    tracker = SoakTracker(None, ds, model, max_tokens=4)  # type: ignore[arg-type]
    acc = tracker.open_window(1, 0)

    def correlated(rid: str, answer: str | None, tokens: int | None) -> RequestCorrelated:
        return RequestCorrelated(request_id=rid, window=acc.window, phase="profiling", item_id=item.id,
                                 arm="audio", ok=True, answer=answer, completion_tokens=tokens)

    out = list(tracker._handle(correlated("r1", "3 o'clock and then", 4)))
    assert isinstance(out[0], AnswerIncomplete) and out[0].defects == ["length_limit"]
    assert out[0].request_id == "r1" and out[0].max_tokens == 4
    assert isinstance(out[1], VerdictReached) and out[1].verdict == "incomplete"
    echo = list(tracker._handle(correlated("r2", item.question, 3)))
    assert echo[0].defects == ["echo"]  # type: ignore[union-attr]
    ok = list(tracker._handle(correlated("r3", "3", 1)))
    assert len(ok) == 1 and ok[0].verdict == "correct"  # type: ignore[union-attr]
    empty = list(tracker._handle(correlated("r4", None, 0)))
    assert empty[0].defects == ["empty"]  # type: ignore[union-attr]
    unseen = list(tracker._handle(correlated("r5", None, None)))
    assert len(unseen) == 1 and unseen[0].verdict == "error"  # type: ignore[union-attr]
