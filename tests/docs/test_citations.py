"""No shipped file cites a path this repository does not ship: not the team's unshipped notes, not a
moved or deleted module. Another project's files are cited by that project's name and path."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
_TEXT = (".py", ".md", ".toml", ".yaml", ".yml", ".json", ".jsonl", ".html", ".css", ".js", ".txt", ".cfg")
_SKIP_DIRS = {".git", ".venv", "runs", "build", "dist", "__pycache__", ".pytest_cache", ".cache"}

# The team's working notes live outside the repository; nothing shipped may send a reader there.
_NOTES = re.compile(r"shared/docs|(?<![\w/.-])(?:trtmc|aiperf|audio-qa|peers|style)\.md\b")
# A path of our own tree, as a reader would follow it (a `/` before it means another tree's path).
_OURS = re.compile(r"(?<![\w./<-])(?:orchestrator|adapters|tests|bench|datasets|docs)/[\w./-]*\w"
                   r"\.(?:py|md|toml|yaml|yml|json|jsonl|html|css|js|txt)\b")
# TRTMC's own test layout, which the inventory reads in a TRTMC checkout: not paths of this repository.
_TRTMC_PATHS = ("tests/e2e/models/", "tests/e2e_harness/")
# Files allowed to cite the notes for now; empty since the inventory cites TRTMC's own files (issue 31). A file
# listed here that no longer cites them fails the test below.
_AWAITING_INVENTORY: set[str] = set()


def _shipped() -> list[str]:
    """The repository's files: git's list where there is one, else a walk that skips build outputs."""
    try:
        done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60, check=True)
        files = [f for f in done.stdout.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for folder, dirs, names in os.walk(ROOT):
            dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.endswith(".egg-info")]
            files += [(Path(folder) / n).relative_to(ROOT).as_posix() for n in names]
    return sorted(f for f in files if f != THIS and (f.endswith(_TEXT) or "." not in Path(f).name)
                  and (ROOT / f).is_file())


def _text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8", errors="replace")


def test_nothing_cites_the_unshipped_notes() -> None:
    """No code, doc, test or fixture names the team's notes (shared/docs, trtmc.md, audio-qa.md, ...)."""
    citing = {f for f in _shipped() if _NOTES.search(_text(f))}
    lines = sorted(f"{f}:{i}: {line.strip()}" for f in citing - _AWAITING_INVENTORY
                   for i, line in enumerate(_text(f).splitlines(), 1) if _NOTES.search(line))
    assert not lines, "cite what ships (or TRTMC's own file and line) instead of:\n" + "\n".join(lines)
    cleared = _AWAITING_INVENTORY - citing
    assert not cleared, f"{sorted(cleared)} no longer cite the notes: remove them from _AWAITING_INVENTORY"


def test_every_path_of_ours_that_is_cited_exists() -> None:
    """A file of this repository named in code, docs or tests exists (moved modules leave no stale names)."""
    shipped = _shipped()
    missing = sorted(f"{f}:{i}: {m.group(0)}" for f in shipped
                     for i, line in enumerate(_text(f).splitlines(), 1) for m in _OURS.finditer(line)
                     if not m.group(0).startswith(_TRTMC_PATHS) and not (ROOT / m.group(0)).exists())
    assert not missing, "these cited paths do not exist in the repository:\n" + "\n".join(missing)
