"""docs/ is reference, not history: no issue numbers, dated narratives or session numbers (measured history
goes to bench/RESULTS.md)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_HISTORY = re.compile(r"\b[Ii]ssues? #?\d+|\b20\d\d-\d\d-\d\d\b|\b[Ss]essions? \d+")


def test_no_history_in_docs() -> None:
    """No 'Issue 29 asked for', no '2026-12-03', no 'session 14' in README.md or any docs/ page."""
    found = [f"{page.relative_to(ROOT)}:{n}: {m.group(0)}"
             for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
             for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
             for m in _HISTORY.finditer(line)]
    assert found == []
