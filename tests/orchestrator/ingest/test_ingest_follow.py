"""`aqbench ingest --follow`: reads as files grow, across rotation and truncation, and stops on SIGINT with a summary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from orchestrator.commands.log_codecs import log_codecs
from orchestrator.ingest import Ingest, new_joiner, run_follow

REPO = Path(__file__).resolve().parents[3]


def _server(i: int) -> str:
    return json.dumps({"request_id": f"r{i}", "status": 200, "handler_ms": 1.0 + i, "end_unix_ns": 10**18 + i}) + "\n"


async def _wait_for(pred, timeout_s: float = 10.0) -> None:
    with anyio.fail_after(timeout_s):
        while not pred():
            await anyio.sleep(0.01)


def _wait_written(out: Path, needle: bytes, timeout_s: float = 60.0) -> None:
    """Until `out` (the ingest's --out journal, written as lines are read) contains `needle`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if out.exists() and needle in out.read_bytes():
            return
        time.sleep(0.02)
    raise AssertionError(f"{out} did not receive {needle!r} within {timeout_s} s")


def _count_passes(ing: Ingest) -> list[int]:
    """A one-item counter of run_follow's passes over its files (each pass ends in `flush_out`)."""
    passes = [0]
    flush = ing.flush_out

    def counted() -> None:
        passes[0] += 1
        flush()

    ing.flush_out = counted  # type: ignore[method-assign]
    return passes


async def _wait_passes(passes: list[int], n: int = 2) -> None:
    """Until the follower has made `n` more whole passes: whatever was on disk before was seen."""
    start = passes[0]
    await _wait_for(lambda: passes[0] >= start + n)


class TestFollow:
    @pytest.mark.anyio
    async def test_append_rotate_truncate_while_reading(self, tmp_path: Path) -> None:
        """A writer appends, rotates (rename + new file) and truncates; every line is read exactly once."""
        path = tmp_path / "records-1.jsonl"
        ing = Ingest(new_joiner, log_codecs())
        passes = _count_passes(ing)
        stop = anyio.Event()
        servers = lambda: ing.summary().server_records  # noqa: E731
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_follow(ing, [str(path)], poll_s=0.01, rescan_s=0.05, stop=stop))
            await _wait_passes(passes)  # the file does not exist yet: follow waits for it
            with path.open("a") as fh:
                fh.write(_server(0) + _server(1))
                fh.flush()
                await _wait_for(lambda: servers() == 2)
                fh.write(_server(2)[:20])  # half a line: not read until its newline arrives
                fh.flush()
                await _wait_passes(passes)
                assert servers() == 2
                fh.write(_server(2)[20:] + _server(3))
            await _wait_for(lambda: servers() == 4)
            # Rotation: the old file keeps a last line written after the rename, then a new file appears.
            os.rename(path, tmp_path / "records-1.jsonl.1")
            with (tmp_path / "records-1.jsonl.1").open("a") as old:
                old.write(_server(4))
            path.write_text(_server(5) + _server(6))
            await _wait_for(lambda: servers() == 7)
            # Truncation in place: reading restarts at byte 0.
            with path.open("r+") as fh:
                fh.truncate(0)
            await _wait_passes(passes)  # the truncation is seen before the file grows again
            path.write_text(_server(7) + '{"request_id": "torn"')
            await _wait_for(lambda: servers() == 8)
            stop.set()
        summary = ing.finish()
        assert summary.server_records == 8 and summary.bad_lines == 1
        assert summary.bad[0].cause == "torn_last_line" and summary.bad[0].line == 2  # numbering restarted
        assert summary.unmatched == {"server": {"no_client_record": 8}}

    def test_sigint_stops_cleanly_with_the_summary(self, tmp_path: Path) -> None:
        """SIGINT ends `aqbench ingest --follow` with the summary of what was read (exit 130)."""
        path, out_path = tmp_path / "records-1.jsonl", tmp_path / "out.jsonl"
        path.write_text(_server(0))
        proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "ingest", "--follow", str(path), "--json",
             "--out", str(out_path)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            _wait_written(out_path, b'"r0"')  # started, and read what is there
            with path.open("a") as fh:
                fh.write(_server(1) + _server(2))
            _wait_written(out_path, b'"r2"')
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 130, err.decode()[-2000:]
        summary = json.loads(out)
        assert summary["server_records"] == 3 and summary["lines"] == 3
