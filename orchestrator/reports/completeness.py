"""Completeness lines of a report: per model and path, answers checked, whole, and each defect with its
items beside their verdicts. Fed by reports/fold.py from AnswerIncomplete, VerdictReached and the
capability stage's count; pure and bounded (at most MAX_ITEMS items kept per path)."""

from __future__ import annotations

from collections import Counter

from orchestrator.events import AnswerIncomplete, VerdictReached
from orchestrator.reports.schema import CompletenessLine, IncompleteAnswer

__all__ = ["CompletenessTally", "MAX_ITEMS", "PATH_ORDER"]

MAX_ITEMS = 200  # incomplete answers listed per path; the counts still count every one
PATH_ORDER = ("capability", "http", "native", "aiperf")
# The reference side's answers judge its own score (NoninferiorityJudged), not the model's completeness.
_OTHER_SIDE = frozenset({"reference"})


class CompletenessTally:
    """One model's completeness, fed event by event."""

    def __init__(self) -> None:
        self.checked: Counter[str] = Counter()
        self.defects: dict[str, Counter[str]] = {}
        self.items: dict[str, dict[str, IncompleteAnswer]] = {}
        self.left_out: Counter[str] = Counter()

    def probes_checked(self, count: int) -> None:
        """The capability stage's count of answered probe requests (it scores none)."""
        self.checked["capability"] += count

    def add_incomplete(self, ev: AnswerIncomplete) -> None:
        if ev.path in _OTHER_SIDE:
            return
        counts = self.defects.setdefault(ev.path, Counter())
        counts.update(ev.defects)
        items = self.items.setdefault(ev.path, {})
        if len(items) >= MAX_ITEMS:
            self.left_out[ev.path] += 1
            return
        key = ev.request_id or f"{ev.item_id}|{ev.arm}#{len(items)}"
        items[key] = IncompleteAnswer(item_id=ev.item_id, arm=ev.arm, request_id=ev.request_id,
                                      defects=list(ev.defects), details=list(ev.details), answer=ev.answer)

    def add_verdict(self, ev: VerdictReached) -> None:
        """Counts an answered request as checked; sets the verdict beside an incomplete one."""
        if ev.verdict == "error" or ev.path in _OTHER_SIDE:  # error: a transport, HTTP or join failure
            return
        self.checked[ev.path] += 1
        item = self.items.get(ev.path, {}).get(ev.request_id) if ev.request_id else None
        if item is not None:
            self.items[ev.path][ev.request_id] = IncompleteAnswer(
                item_id=item.item_id, arm=item.arm, request_id=item.request_id, defects=item.defects,
                details=item.details, verdict=ev.verdict, answer=item.answer)

    def lines(self) -> list[CompletenessLine]:
        """One line per path that checked an answer or found a defect, in path order."""
        out = []
        for path in sorted(set(self.checked) | set(self.defects), key=_path_key):
            items = list(self.items.get(path, {}).values())
            incomplete = len(items) + self.left_out[path]
            checked = max(self.checked[path], incomplete)
            out.append(CompletenessLine(path=path, checked=checked, complete=checked - incomplete,
                                        defects=dict(sorted(self.defects.get(path, Counter()).items())),
                                        items=items, items_left_out=self.left_out[path]))
        return out


def _path_key(path: str) -> tuple[int, str]:
    return (PATH_ORDER.index(path) if path in PATH_ORDER else len(PATH_ORDER), path)
