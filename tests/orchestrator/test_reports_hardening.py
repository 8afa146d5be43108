"""Report defects found by drills: journal replay (duplicate seq, empty journal), interrupted headers,
plans, run-aiperf runs, per-kind flags, reproduce commands and number formats."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_reports import qualify_journal

from orchestrator.events import RunFinished


def _report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrator", "report", *args], capture_output=True, text=True,
                          timeout=60)


class TestJournalReplay:
    def test_a_duplicated_line_is_corruption_named_by_file_and_line(self, tmp_path: Path) -> None:
        """A line written twice would count its request twice: `aqbench report` exits 3 naming the line."""
        journal = qualify_journal().write(tmp_path / "run" / "events.jsonl")
        lines = journal.read_bytes().splitlines(keepends=True)
        lines.insert(41, lines[40])  # line 42 repeats line 41
        journal.write_bytes(b"".join(lines))
        proc = _report(str(journal.parent), "--out", str(tmp_path / "out"))
        assert proc.returncode == 3, proc.stdout
        assert f"{journal}:42: corrupt journal: seq 41 repeats an earlier event's (line 41 has seq 41)" in proc.stderr
        assert not (tmp_path / "out" / "report.json").exists()

    def test_a_duplicated_last_line_is_caught_too(self, tmp_path: Path) -> None:
        journal = qualify_journal().write(tmp_path / "run" / "events.jsonl")
        lines = journal.read_bytes().splitlines(keepends=True)
        journal.write_bytes(b"".join([*lines, lines[-1]]))
        proc = _report(str(journal))
        assert proc.returncode == 3 and f"{journal}:{len(lines) + 1}: corrupt journal: seq" in proc.stderr

    def test_an_empty_journal_exits_2(self, tmp_path: Path) -> None:
        (tmp_path / "events.jsonl").write_bytes(b"")
        proc = _report(str(tmp_path))
        assert proc.returncode == 2, proc.stdout
        assert f"{tmp_path / 'events.jsonl'}: the journal is empty" in proc.stderr
        assert not (tmp_path / "report.json").exists()
