"""The static checks CI runs through the test command: ruff over the tree, mypy strict over the core."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    """`ruff check` (async rules and the banned-import rule that keeps adapters out of the core) passes."""
    done = _run("ruff", "check", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_mypy_strict_on_the_core() -> None:
    """`mypy` (strict on orchestrator/, per pyproject.toml) passes."""
    done = _run("mypy")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
