"""Tests of the shared line follower: whole lines only, truncation, replacement, torn tails."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import anyio
import pytest

from adapters.tail import LineFollower


class TestLineFollower:
    def test_missing_file_then_whole_lines_only(self, tmp_path: Path) -> None:
        """A missing file reads as empty; a half-written line waits for its newline."""
        path = tmp_path / "f.jsonl"
        f = LineFollower(path)
        assert f.read_available() == []
        path.write_bytes(b'{"a":1}\n{"b":')
        assert f.read_available() == [b'{"a":1}']
        with path.open("ab") as fh:
            fh.write(b'2}\n')
        assert f.read_available() == [b'{"b":2}']
        f.close()

    def test_a_backlog_is_handed_out_in_steps_and_a_final_read_takes_the_rest(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A follower far behind its file reads a step (to the end of a line) at a time, every line once and
        in order; the final read takes all that is left, the torn tail too."""
        import adapters.tail

        monkeypatch.setattr(adapters.tail, "_CHUNK", 16)
        monkeypatch.setattr(adapters.tail, "_STEP", 40)
        path = tmp_path / "f.jsonl"
        lines = [f"line-{i:03d}".encode() for i in range(50)]
        path.write_bytes(b"\n".join(lines) + b"\n" + b"torn")
        f = LineFollower(path)
        first = f.read_available()
        assert 3 <= len(first) <= 6 and first == lines[: len(first)]
        second = f.read_available()
        assert second == lines[len(first): len(first) + len(second)] and second
        assert f.read_available(final=True) == lines[len(first) + len(second):] + [b"torn"]
        f.close()

    def test_truncation_restarts_from_zero(self, tmp_path: Path) -> None:
        """A file truncated in place (AIPerf at run start) is read again from its first byte."""
        path = tmp_path / "f.jsonl"
        path.write_bytes(b"old-1\nold-2\n")
        f = LineFollower(path)
        assert f.read_available() == [b"old-1", b"old-2"]
        path.write_bytes(b"new\n")
        assert f.read_available() == [b"new"]
        assert f.truncations == 1
        f.close()

    def test_replaced_file_drains_old_then_reads_new(self, tmp_path: Path) -> None:
        """A rotated file (new inode) yields the old file's rest first, then the new file."""
        path = tmp_path / "f.jsonl"
        path.write_bytes(b"1\n")
        f = LineFollower(path)
        assert f.read_available() == [b"1"]
        with path.open("ab") as fh:
            fh.write(b"2\n")
        os.rename(path, tmp_path / "f.jsonl.1")
        path.write_bytes(b"3\n")
        assert f.read_available() == [b"2", b"3"]
        f.close()

    def test_final_read_hands_out_torn_tail(self, tmp_path: Path) -> None:
        """At the end, an unterminated last line is returned and counted as torn."""
        path = tmp_path / "f.jsonl"
        path.write_bytes(b"1\n2")
        f = LineFollower(path)
        assert f.read_available() == [b"1"]
        assert f.read_available(final=True) == [b"2"] and f.torn == 1
        f.close()

    def test_a_read_allocates_what_the_file_holds_not_a_chunk(self, tmp_path: Path) -> None:
        """A read of a few new bytes, or of none, allocates about that much: os.pread allocates the size
        it is asked for, and a 1 MiB request per read fragmented a long soak's heap (issue 23)."""
        path = tmp_path / "f.jsonl"
        path.write_bytes(b"")
        f = LineFollower(path)
        tracemalloc.start()
        try:
            for payload in (b'{"a":1}\n', b""):
                with path.open("ab") as fh:
                    fh.write(payload)
                tracemalloc.reset_peak()
                lines = f.read_available()
                peak = tracemalloc.get_traced_memory()[1] - tracemalloc.get_traced_memory()[0]
                assert lines == ([b'{"a":1}'] if payload else [])
                assert peak < 64 * 1024, f"a read of {len(payload)} bytes peaked at {peak} bytes"
        finally:
            tracemalloc.stop()
            f.close()

    @pytest.mark.anyio
    async def test_follow_yields_until_stopped(self, tmp_path: Path) -> None:
        """follow() streams appended lines and returns after the stop event with a final read."""
        path = tmp_path / "f.jsonl"
        f = LineFollower(path, poll_s=0.005)
        stop = anyio.Event()
        got: list[bytes] = []

        async def writer() -> None:
            for i in range(5):
                with path.open("ab") as fh:
                    fh.write(f"{i}\n".encode())
                await anyio.sleep(0.01)
            with path.open("ab") as fh:
                fh.write(b"last")
            stop.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            with anyio.fail_after(5):
                async for batch in f.follow(stop):
                    got += batch
        f.close()
        assert got == [b"0", b"1", b"2", b"3", b"4", b"last"]
