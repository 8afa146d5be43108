"""A running soak's checkpoint report comes from a child process (`aqbench report --checkpoint`), and
`aqbench report` rebuilds a soak's own report beside the run-shaped one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import psutil
import pytest
from config_support import make_config
from reports_support import _Journal
from soak_support import _window

from orchestrator.events import RestartDetail, RunFinished, RunStarted, SoakVerdict, Warned
from orchestrator.soak.checkpoint import CheckpointReportFailed, report_argv, write_checkpoint_report
from orchestrator.spine.bus import Bus
from orchestrator.spine.journal import JournalWriter, read_journal

pytestmark = pytest.mark.anyio


def soak_journal(path: Path, *, finished: bool) -> Path:
    """A soak's journal with two closed windows and a checkpoint verdict (and RunFinished when `finished`)."""
    j = _Journal()
    j.add(RunStarted(command="soak", argv=["aqbench", "soak"], config=make_config()))
    j.add(_window(1, 300))
    j.add(_window(2, 301))
    j.add(SoakVerdict(metric="restarts", passed=True, outcome="pass", final=finished,
                      reason="no unexpected server exit", windows_closed=2, detail=RestartDetail()))
    if finished:
        j.add(RunFinished(status="ok", exit_code=0, counts={"windows": 2}))
    return j.write(path)


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator", "report", *args], capture_output=True, text=True,
                          timeout=120)


def _children() -> set[int]:
    """This process's children, zombies included (a child killed but not reaped is one)."""
    return {c.pid for c in psutil.Process(os.getpid()).children(recursive=True)}


class TestReportCommand:
    def test_a_soak_journal_gets_its_soak_report_rebuilt_too(self, tmp_path: Path) -> None:
        """`aqbench report` on a finished soak writes report.* and soak.*, and soak.json says "ok"."""
        journal = soak_journal(tmp_path / "run" / "events.jsonl", finished=True)
        proc = _report(str(journal.parent))
        assert proc.returncode == 0, proc.stderr
        for name in ("report.json", "report.md", "report.html", "soak.json", "soak.md", "soak.html"):
            assert (journal.parent / name).is_file(), name
            assert str(journal.parent / name) in proc.stdout
        assert json.loads((journal.parent / "soak.json").read_text())["status"] == "ok"

    def test_a_qualify_journal_gets_no_soak_report(self, tmp_path: Path) -> None:
        from reports_support import qualify_journal

        qualify_journal().write(tmp_path / "events.jsonl")
        assert _report(str(tmp_path)).returncode == 0
        assert (tmp_path / "report.json").is_file() and not (tmp_path / "soak.json").exists()

    def test_checkpoint_writes_the_soak_report_only_in_progress(self, tmp_path: Path) -> None:
        """--checkpoint on a journal still being written: soak.* only, "in progress", never "interrupted"."""
        journal = soak_journal(tmp_path / "events.jsonl", finished=False)
        proc = _report(str(journal), "--checkpoint")
        assert proc.returncode == 0, proc.stderr
        assert not (tmp_path / "report.json").exists()
        md = (tmp_path / "soak.md").read_text()
        assert "run status: in progress; windows closed: 2" in md and "interrupted" not in md


class TestCheckpointChild:
    async def test_the_child_writes_the_report_and_is_gone(self, tmp_path: Path) -> None:
        soak_journal(tmp_path / "events.jsonl", finished=False)
        before = _children()
        await write_checkpoint_report(tmp_path)
        assert json.loads((tmp_path / "soak.json").read_text())["status"] == "in progress"
        assert _children() <= before

    async def test_a_failing_child_is_named_with_its_exit_and_stderr(self, tmp_path: Path) -> None:
        """No journal: the child exits 2 and its error reaches the exception, command line included."""
        with pytest.raises(CheckpointReportFailed, match=r"exited 2: .*no run journal here") as caught:
            await write_checkpoint_report(tmp_path)
        assert " ".join(report_argv(tmp_path)) in str(caught.value)

    async def test_a_child_past_its_deadline_is_killed_and_reaped(self, tmp_path: Path) -> None:
        soak_journal(tmp_path / "events.jsonl", finished=False)
        before = _children()
        with pytest.raises(CheckpointReportFailed, match=r"ran past its 0.05 s deadline and was killed"):
            await write_checkpoint_report(tmp_path, deadline_s=0.05)
        assert _children() <= before
        assert not (tmp_path / "soak.json").exists()

    async def test_cancelling_the_soak_kills_the_child(self, tmp_path: Path) -> None:
        soak_journal(tmp_path / "events.jsonl", finished=False)
        before = _children()
        with anyio.move_on_after(0.05) as scope:
            await write_checkpoint_report(tmp_path)
        assert scope.cancelled_caught and _children() <= before
        assert not (tmp_path / "soak.json").exists()


class TestJournalFlush:
    async def test_wait_written_returns_once_the_events_are_in_the_file(self, tmp_path: Path) -> None:
        """What a child reads is what was published: wait_written(seq) holds until seq is flushed."""
        bus = Bus("run-flush")
        writer = JournalWriter(tmp_path / "events.jsonl")
        async with anyio.create_task_group() as tg:
            await tg.start(writer.run, bus)
            for i in range(50):
                await bus.publish(Warned(source="test", code="w", message=str(i)))
            assert await writer.wait_written(bus.statistics().published, timeout_s=10)
            events, _ = read_journal(tmp_path / "events.jsonl")
            assert [e.message for e in events if isinstance(e, Warned)] == [str(i) for i in range(50)]
            assert not await writer.wait_written(bus.statistics().published + 1, timeout_s=0.05)
            await bus.aclose()
