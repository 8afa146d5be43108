"""The static checks CI runs through the test command: ruff over the tree, and mypy, strict over orchestrator/ and
adapters/ and looser over tests/ and bench/ (one run, as pyproject.toml sets it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
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
def test_mypy_strict_on_the_core_and_adapters_and_loose_on_tests_and_bench() -> None:
    """`mypy` passes in one run over every tree pyproject.toml names: strict on orchestrator/ and adapters/, looser
    on tests/ and bench/ (the stand-in TRTMC checkouts left out: they are data). One run, not one per strictness:
    the second analysed orchestrator/ and adapters/ again (about 45 s of CPU for both, 27 s for one)."""
    done = _run("mypy")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_the_core_and_adapters_get_every_flag_of_mypy_strict() -> None:
    """pyproject.toml's override for orchestrator/ and adapters/ (with the global settings) turns on every flag
    that this mypy's `--strict` enables, as its --help lists them: a flag a newer mypy adds to --strict fails here
    until it is added."""
    help_text = subprocess.run([sys.executable, "-m", "mypy", "--help"], capture_output=True, text=True, timeout=120,
                               env={**os.environ, "COLUMNS": "1000"}).stdout
    listed = re.search(r"--strict +Strict mode; enables the following flags: ([^\n]*)", help_text)
    assert listed, help_text[-3000:]
    flags = re.findall(r"--[a-z-]+", listed.group(1))
    assert len(flags) >= 10, flags
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    [core] = [o for o in mypy["overrides"] if "orchestrator.*" in o["module"]]
    assert {"adapters.*", "orchestrator", "adapters"} <= set(core["module"]), core["module"]
    settings = {**mypy, **core}
    wanted = {}
    for flag in flags:
        name = flag.removeprefix("--")
        wanted[name.removeprefix("no-").replace("-", "_")] = not name.startswith("no-")
    missing = {k: v for k, v in wanted.items() if settings.get(k) is not v}
    assert not missing, f"set these in pyproject.toml's override for orchestrator.* and adapters.*: {missing}"
    # And what the looser settings of tests/ and bench/ turn off stays on there.
    assert settings["strict_optional"] is True and set(mypy["disable_error_code"]) <= set(core["enable_error_code"])
