"""Every module of the shipped packages has a docstring of one to three lines: its one job, not its manual."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("orchestrator", "adapters", "datasets")  # datasets/ ships as aqbench_datasets
MAX_LINES = 3


@cache
def _docstring_lines() -> dict[str, int | None]:
    """Each package module's docstring length in lines (None without one), by path from the repository root."""
    found: dict[str, int | None] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            doc = ast.get_docstring(ast.parse(path.read_text(), str(path)), clean=False)
            found[path.relative_to(ROOT).as_posix()] = None if doc is None else len(doc.strip().splitlines())
    return found


class TestModuleDocstrings:
    def test_every_module_docstring_is_one_to_three_lines(self) -> None:
        """A module says its job in 1-3 lines; invariants sit in comments where they apply, usage in docs/."""
        lines = _docstring_lines()
        assert len(lines) > 300  # the walk found the packages
        bad = {path: n for path, n in lines.items()
               if n is None or not 1 <= n <= MAX_LINES}
        assert bad == {}, "module docstrings missing (None) or longer than 3 lines: " + ", ".join(
            f"{path} ({n})" for path, n in sorted(bad.items()))
