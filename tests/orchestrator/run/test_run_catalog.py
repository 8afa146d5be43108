"""`aqbench runs`: run folders listed from their journals' ends, pruned by count or age, never one still
being written unless forced, and the clip cache pruned to what the remaining runs name."""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgspec
import pytest

from orchestrator.cli import main
from orchestrator.config import load_config
from orchestrator.dataset.clip_cache import ClipCache, ClipSent, append_manifest
from orchestrator.events import Event, PhaseStarted, RunFinished, RunStarted
from orchestrator.run import open_run
from orchestrator.run.catalog import list_runs, plan_prune, prune
from orchestrator.run.writing import WRITING_MARK, WritingMark, is_being_written
from orchestrator.spine.journal import JournalFile

NOW = time.time()
DAY_NS = 86_400 * 10**9


def _run(root: Path, name: str, *, days_ago: float, command: str = "qualify", status: str | None = "ok",
         filler: int = 0, clips: list[str] | None = None, quiet: bool = True) -> Path:
    """A run folder whose journal starts `days_ago` before NOW; `status` None: no RunFinished."""
    folder = root / name
    folder.mkdir(parents=True)
    t = int((NOW * 10**9) - days_ago * DAY_NS)
    lines: list[Event] = [RunStarted(command=command, ts_ns=t, seq=1)]
    lines += [PhaseStarted(phase="x" * filler, seq=2)] if filler else []
    lines += [RunFinished(status=status, ts_ns=t + 10**9, seq=3)] if status else []  # type: ignore[arg-type]
    (folder / "events.jsonl").write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in lines))
    if clips:
        append_manifest(folder / "wire", [ClipSent(key=f"k{i}.audio", sha256=c, bytes=1, format="wav", path="")
                                          for i, c in enumerate(clips)])
    if quiet:  # written long ago: no writer could still be at it
        old = time.time() - 3 * 3600
        os.utime(folder / "events.jsonl", (old, old))
    return folder


def _config(folder: Path, root: Path) -> Path:
    """The shipped bench.toml with its runs under `root`."""
    text = (Path(__file__).resolve().parents[3] / "bench.toml").read_text()
    assert 'output_dir = "runs"' in text
    (folder / "bench.toml").write_text(text.replace('output_dir = "runs"', f'output_dir = "{root}"'))
    return folder / "bench.toml"


class TestWritingMark:
    def test_held_free_and_absent(self, tmp_path: Path) -> None:
        """A held mark reads as being written, a second one on the folder is refused; released, the file
        is gone; a mark file nobody holds (its writer died) reads as free."""
        assert is_being_written(tmp_path) is None
        mark = WritingMark(tmp_path)
        assert is_being_written(tmp_path) is True
        with pytest.raises(BlockingIOError):
            WritingMark(tmp_path)
        mark.release()
        assert is_being_written(tmp_path) is None and not (tmp_path / WRITING_MARK).exists()
        (tmp_path / WRITING_MARK).write_text("4242\n")
        assert is_being_written(tmp_path) is False


class TestListing:
    def test_kind_status_size_and_order(self, tmp_path: Path) -> None:
        """Oldest first; kind from RunStarted, status from RunFinished; an unmarked journal without an end
        is interrupted when quiet, running when written lately; a held mark is running; the cache is no run."""
        _run(tmp_path, "soak-b", days_ago=2, command="soak", status="failed", filler=50_000)
        _run(tmp_path, "qualify-a", days_ago=5)
        _run(tmp_path, "dead", days_ago=1, status=None)
        _run(tmp_path, "fresh", days_ago=0.01, status=None, quiet=False)
        held = _run(tmp_path, "held", days_ago=0.5, status=None)
        ClipCache(tmp_path / ".clips").put(b"x", "wav")
        (tmp_path / "notes").mkdir()
        mark = WritingMark(held)
        try:
            got = list_runs(tmp_path)
        finally:
            mark.release()
        assert [(e.run_id, e.kind, e.status, e.live) for e in got] == [
            ("qualify-a", "qualify", "ok", False), ("soak-b", "soak", "failed", False),
            ("dead", "qualify", "interrupted", False), ("held", "qualify", "running", True),
            ("fresh", "qualify", "running", True)]
        sizes = {e.run_id: e.size_bytes for e in got}
        assert sizes["soak-b"] > 50_000 > sizes["qualify-a"] > 0

    def test_end_found_past_a_torn_line(self, tmp_path: Path) -> None:
        """A torn line after RunFinished does not hide it."""
        folder = _run(tmp_path, "r", days_ago=1, status="failed")
        with (folder / "events.jsonl").open("ab") as f:
            f.write(b'{"kind":"warn')
        assert list_runs(tmp_path)[0].status == "failed"


    def test_a_compact_journal_is_read_through(self, tmp_path: Path) -> None:
        """A soak's compact journal (events.jsonl.zst) lists with its kind and status like a plain one."""
        plain = _run(tmp_path, "soak-1", days_ago=1, command="soak", status="failed")
        journal = JournalFile(plain / "events.jsonl.zst")
        journal.append((plain / "events.jsonl").read_bytes(), close=True)
        journal.close()
        (plain / "events.jsonl").unlink()
        [entry] = list_runs(tmp_path, now_s=NOW)
        assert (entry.run_id, entry.kind, entry.status) == ("soak-1", "soak", "failed")


class TestPruning:
    def test_keep_and_older_than_spare_live_runs(self, tmp_path: Path) -> None:
        """--keep N picks all but the newest N, --older-than those started before; a live run is spared
        unless forced."""
        for i in range(5):
            _run(tmp_path, f"r{i}", days_ago=10 - 2 * i)  # r0 oldest (10 days), r4 newest (2 days)
        live = _run(tmp_path, "live", days_ago=9, status=None)
        mark = WritingMark(live)
        try:
            entries = list_runs(tmp_path)
        finally:
            mark.release()
        names = lambda es: [e.run_id for e in es]  # noqa: E731
        plan = plan_prune(entries, keep=2, now_s=NOW)
        assert names(plan.remove) == ["r0", "r1", "r2"] and names(plan.spared) == ["live"]
        assert names(plan_prune(entries, older_than_s=7 * 86400, now_s=NOW).remove) == ["r0", "r1"]
        assert names(plan_prune(entries, keep=5, now_s=NOW, force=True).remove) == ["r0"]
        assert names(plan_prune(entries, keep=0, older_than_s=86400, now_s=NOW, force=True).remove) == [
            "r0", "live", "r1", "r2", "r3", "r4"]

    def test_prune_removes_runs_and_unnamed_clips(self, tmp_path: Path) -> None:
        """A dry run removes nothing; then the runs go, and the clips only they named, while a clip a
        remaining run names stays."""
        cache = ClipCache(tmp_path / ".clips")
        _, shared = cache.put(b"shared", "wav")
        _, only_old = cache.put(b"only old", "wav")
        old = _run(tmp_path, "old", days_ago=3, clips=[shared, only_old])
        _run(tmp_path, "new", days_ago=1, clips=[shared])
        plan = plan_prune(list_runs(tmp_path), keep=1, now_s=NOW)
        dry = prune(plan, tmp_path, cache, dry_run=True, cache_grace_s=0)
        assert [e.run_id for e in dry.runs] == ["old"] and dry.clips == [str(cache.path_of(only_old, "wav"))]
        assert old.exists() and len(cache.entries()) == 2
        done = prune(plan, tmp_path, cache, dry_run=False, cache_grace_s=0)
        assert done.clips == dry.clips and done.clip_bytes == len(b"only old") and done.run_bytes > 0
        assert not old.exists() and [p.name for p in cache.entries()] == [f"{shared}.wav"]


class TestCommand:
    def test_lists_then_prunes_on_delete(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`aqbench runs` lists; with --keep it only says what would go until --delete removes it."""
        root = tmp_path / "runs"
        cfg = _config(tmp_path, root)
        _run(root, "qualify-old", days_ago=30)
        _run(root, "soak-new", days_ago=1, command="soak")
        assert main(["runs", "--config", str(cfg)]) == 0
        out = capsys.readouterr().out
        assert "qualify-old" in out and "soak-new" in out and "2 runs" in out
        assert main(["runs", "--config", str(cfg), "--older-than", "7d"]) == 0
        out = capsys.readouterr().out
        assert f"would remove {root / 'qualify-old'}" in out and "pass --delete" in out
        assert (root / "qualify-old").exists()
        assert main(["runs", "--config", str(cfg), "--older-than", "7d", "--delete"]) == 0
        assert "removed 1 runs" in capsys.readouterr().out
        assert sorted(p.name for p in root.iterdir()) == ["soak-new"]

    def test_delete_needs_a_rule(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--delete without --keep or --older-than is a usage error (exit 2), as is a bad duration."""
        cfg = _config(tmp_path, tmp_path)
        assert main(["runs", "--config", str(cfg), "--delete"]) == 2
        assert "give one of them" in capsys.readouterr().err
        with pytest.raises(SystemExit) as bad:  # argparse refuses the duration itself, as for every duration flag
            main(["runs", "--config", str(cfg), "--older-than", "soon"])
        assert bad.value.code == 2
        assert "--older-than: 'soon' is not a positive duration" in capsys.readouterr().err


class TestOpenRunMarks:
    @pytest.mark.anyio
    async def test_a_run_is_listed_running_while_open(self, tmp_path: Path) -> None:
        """Inside open_run the folder's mark is held and `aqbench runs` lists it running; once closed, it is
        listed with RunFinished's status and the mark is gone."""
        cfg = load_config(_config(tmp_path, tmp_path / "runs"))
        async with open_run(cfg, command="qualify", argv=[]) as run:
            await run.flush_journal()
            assert is_being_written(run.run_dir) is True
            [entry] = list_runs(tmp_path / "runs")
            assert (entry.kind, entry.status, entry.live) == ("qualify", "running", True)
        assert is_being_written(run.run_dir) is None
        [entry] = list_runs(tmp_path / "runs")
        assert (entry.kind, entry.status, entry.live) == ("qualify", "ok", False)
