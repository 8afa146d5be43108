"""Correctness figures of a report, from the verdict cells: pass rates by path, arm and kind, the audio
lift, verdict grids and identity mismatches. Pure; fed by reports/fold.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Protocol

from orchestrator.events import AnswerMismatch, CorrectnessPhase, ItemRef, PhaseDetail
from orchestrator.reports.schema import (
    AudioLift,
    FailingItem,
    GridCell,
    GridRow,
    Mismatch,
    PathCorrectness,
    VerdictGrid,
)
from orchestrator.reports.windows import (
    pass_rate,
)

__all__ = ["Cells", "failing_items", "MAX_GRID_ITEMS", "path_correctness", "verdict_grids", "arm_order", "audio_lift", "mismatches"]

MAX_GRID_ITEMS = 400  # rows of the verdict grid per path; the pass rates still count every item

# (item_id, arm) -> (verdict, answer, gold, kind)
Cells = dict[tuple[str, str], tuple[str, str | None, str, str]]


def _diff(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None


def path_correctness(by_path: dict[str, Cells], load: dict[tuple[str, str], Counter[str]]) -> dict[str, PathCorrectness]:
    """Pass rates per path by arm and by kind, with the audio lift; `load` is the AIPerf path's tally."""
    out: dict[str, PathCorrectness] = {}
    for path, cells in by_path.items():
        by_arm: dict[str, Counter[str]] = {}
        by_kind: dict[str, dict[str, Counter[str]]] = {}
        for (_item, arm), (verdict, _a, _g, kind) in cells.items():
            by_arm.setdefault(arm, Counter())[verdict] += 1
            by_kind.setdefault(kind, {}).setdefault(arm, Counter())[verdict] += 1
        out[path] = PathCorrectness(
            path=path,
            by_arm={a: pass_rate(c) for a, c in sorted(by_arm.items())},
            by_kind={k: {a: pass_rate(c) for a, c in sorted(arms.items())} for k, arms in sorted(by_kind.items())},
            audio_lift=audio_lift(cells),
        )
    if load:
        load_by_arm: dict[str, Counter[str]] = {}
        load_by_kind: dict[str, dict[str, Counter[str]]] = {}
        for (kind, arm), c in load.items():
            load_by_arm.setdefault(arm, Counter()).update(c)
            load_by_kind.setdefault(kind, {}).setdefault(arm, Counter()).update(c)
        out["aiperf"] = PathCorrectness(
            path="aiperf",
            by_arm={a: pass_rate(c) for a, c in sorted(load_by_arm.items())},
            by_kind={k: {a: pass_rate(c) for a, c in sorted(arms.items())} for k, arms in sorted(load_by_kind.items())},
        )
    return out


def verdict_grids(cells_by_path: dict[str, Cells]) -> list[VerdictGrid]:
    """One grid of verdicts per path: items by arm, at most MAX_GRID_ITEMS rows each."""
    grids = []
    for path, cells in cells_by_path.items():
        arms: list[str] = []
        rows: dict[str, dict[str, GridCell]] = {}
        kinds: dict[str, str] = {}
        for (item, arm), (verdict, answer, gold, kind) in cells.items():
            if arm not in arms:
                arms.append(arm)
            if item not in rows and len(rows) >= MAX_GRID_ITEMS:
                continue
            rows.setdefault(item, {})[arm] = GridCell(verdict=verdict, answer=answer, gold=gold)
            kinds.setdefault(item, kind)
        total_items = len({item for item, _arm in cells})
        grids.append(VerdictGrid(
            path=path, arms=sorted(arms, key=arm_order),
            rows=[GridRow(item_id=i, kind=kinds[i], cells=c) for i, c in rows.items()],
            truncated=total_items - len(rows),
        ))
    return grids


def arm_order(arm: str) -> tuple[int, str]:
    order = {"audio": 0, "silence": 1, "transcript": 2}
    return order.get(arm, 9), arm


def audio_lift(cells: dict[tuple[str, str], tuple[str, str | None, str, str]]) -> AudioLift:
    """Audio arm against the silence arm over the items both answered, and against the transcript arm over
    the speech items both answered: where the conditioning arms ran on a subset (`[dataset]
    conditioning_items`), each lift pairs the audio arm's answers to the same items."""
    audio: dict[str, bool] = {}
    silence: dict[str, bool] = {}
    transcript: dict[str, bool] = {}
    for (item, arm), (verdict, _a, _g, _k) in cells.items():
        ok = verdict == "correct"
        if arm == "audio":
            audio[item] = ok
        elif arm == "silence":
            silence[item] = ok
        elif arm == "transcript":
            transcript[item] = ok
    audio_rate = sum(audio.values()) / len(audio) if audio else None
    paired = [i for i in silence if i in audio]
    silence_rate = sum(silence[i] for i in paired) / len(paired) if paired else None
    audio_silenced = sum(audio[i] for i in paired) / len(paired) if paired else None
    # Speech items are those with a transcript arm; compare on the items both arms answered.
    speech = [i for i in transcript if i in audio]
    audio_speech = sum(audio[i] for i in speech) / len(speech) if speech else None
    transcript_rate = sum(transcript[i] for i in speech) / len(speech) if speech else None
    return AudioLift(audio_rate=audio_rate, silence_rate=silence_rate, vs_silence=_diff(audio_silenced, silence_rate),
                     speech_items=len(speech), audio_rate_speech=audio_speech, transcript_rate=transcript_rate,
                     vs_transcript=_diff(audio_speech, transcript_rate))


def mismatches(entries: Iterable[AnswerMismatch]) -> list[Mismatch]:
    """Mismatch entries as qualify journals them: item_id, arm, and one answer per path."""
    return [Mismatch(item_id=e.item_id, arm=e.arm, answers=dict(sorted(e.answers.items())), request_id=e.request_id)
            for e in entries]


class _StageLike(Protocol):
    outcome: str
    detail: PhaseDetail | None


def failing_items(cells: Cells, correctness: _StageLike | None, gate_arm: str) -> list[FailingItem]:
    """Failing items as the correctness stage listed them, with their answers from the HTTP verdicts; when the
    stage failed without a list, every wrong answer on the gate's arm."""
    detail = correctness.detail if correctness is not None else None
    listed = detail.failing_items if isinstance(detail, CorrectnessPhase) else None
    keys: list[tuple[str, str]] = []
    if listed:
        for entry in listed:
            if isinstance(entry, ItemRef):
                keys.append((entry.item_id, entry.arm or gate_arm))
            else:
                keys.append((entry, gate_arm))
    elif correctness is not None and correctness.outcome == "failed":
        keys = [k for k, cell in cells.items() if k[1] == gate_arm and cell[0] != "correct"]
    out = []
    for item_id, arm in keys:
        verdict, answer, gold, kind = cells.get((item_id, arm), ("", None, "", ""))
        out.append(FailingItem(item_id=item_id, arm=arm, kind=kind, path="http", verdict=verdict,
                               answer=answer, gold=gold))
    return out
