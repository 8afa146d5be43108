"""The test tree mirrors the packages: unique test file names, and no test module reaching into another folder's."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _test_modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if ".venv" not in p.parts)


def test_test_file_names_are_unique() -> None:
    """pytest imports test modules by their base name (no __init__.py), so two of one name would collide."""
    seen: defaultdict[str, list[str]] = defaultdict(list)
    for path in _test_modules():
        seen[path.name].append(str(path.relative_to(TESTS)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_test_modules_import_test_modules_of_their_own_folder_only() -> None:
    """What tests in two folders share lives in a support module, not in one folder's test file."""
    by_name = {p.stem: p.parent for p in _test_modules()}
    reaching = []
    for path in _test_modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith("test_") and by_name.get(name, path.parent) != path.parent:
                    reaching.append(f"{path.relative_to(TESTS)} imports {name}")
    assert reaching == []
