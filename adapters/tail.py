"""Follow a growing file and hand out whole lines only; a shrink or a new inode restarts from byte 0. Knows
nothing about what the lines mean."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgspec

from adapters.fswatch import FolderWatch

__all__ = ["LineFollower", "FollowerStatistics"]

_CHUNK = 1 << 20
# A read hands out at most about this much (to the end of a line): a follower far behind a file catches up in
# steps, its memory bounded by the step, not by the backlog (a final read still takes everything).
_STEP = 8 << 20


class FollowerStatistics(msgspec.Struct, frozen=True):
    path: str
    offset: int
    lines: int
    truncations: int
    pending_bytes: int


class LineFollower:
    """Reads the whole lines appended to `path` since the last read.

    The file may not exist yet. A half-written last line stays buffered until its newline arrives;
    `read_available(final=True)` hands it out too (a torn tail, counted in `torn`).
    """

    def __init__(self, path: str | Path, *, poll_s: float = 0.01) -> None:
        self.path = Path(path)
        self.poll_s = poll_s
        self.lines = 0
        self.truncations = 0
        self.torn = 0
        self._fd: int | None = None
        self._ino: int | None = None
        self._offset = 0
        self._pending = b""

    def _reopen(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        self._close_fd()
        self._fd, self._ino = fd, os.fstat(fd).st_ino
        self._offset, self._pending = 0, b""
        return True

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _check_identity(self) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return  # removed: keep reading the old inode until a new file appears
        if self._fd is None or st.st_ino != self._ino:
            carry = b""
            if self._fd is not None:
                self._drain_fd()  # what the old file still held belongs before the new file's lines
                carry = self._pending
                if carry and not carry.endswith(b"\n"):
                    carry += b"\n"  # the old file's torn last line must not merge with the new first line
                    self.torn += 1
                self.truncations += 1
            if self._reopen():
                self._pending = carry
        elif st.st_size < self._offset:
            # Truncated in place (AIPerf does this at run start): everything buffered is stale.
            self.truncations += 1
            self._offset, self._pending = 0, b""

    def _drain_fd(self, step: int | None = None) -> None:
        assert self._fd is not None
        # Ask for what the file holds, not for a fixed chunk: os.pread allocates the size asked for before
        # it reads, and a 1 MiB buffer per read (most reads find a few lines, or nothing) fragmented the C
        # heap of a long soak until its RSS climbed (issue 23). Chunks are joined once: adding each to the
        # buffer copied a backlog of N MiB N times.
        parts, got = [self._pending], 0
        while (size := os.fstat(self._fd).st_size - self._offset) > 0:
            chunk = os.pread(self._fd, min(size, _CHUNK), self._offset)
            if not chunk:
                break
            self._offset += len(chunk)
            got += len(chunk)
            parts.append(chunk)
            if step is not None and got >= step and b"\n" in chunk:
                break
        if len(parts) > 1:
            self._pending = b"".join(parts)

    def read_available(self, *, final: bool = False) -> list[bytes]:
        """Return the complete lines (without newline) appended since the last call, up to about 8 MiB of
        them (the rest at the next call). Does not block beyond local reads. `final=True` returns every line
        left, and an unterminated last line too."""
        self._check_identity()
        if self._fd is None:
            return []
        self._drain_fd(None if final else _STEP)
        if not self._pending:
            return []
        *lines, rest = self._pending.split(b"\n")
        self._pending = rest
        if final and rest:
            lines.append(rest)
            self._pending = b""
            self.torn += 1
        out = [line for line in lines if line.strip()]
        self.lines += len(out)
        return out

    # Each read is a stat of the path, then an fstat and a pread per chunk the file holds; it reads again when
    # the file's folder reports a change (inotify, adapters/fswatch.py), or every `poll_s` where the platform
    # cannot report changes.
    async def follow(self, stop: anyio.Event) -> AsyncIterator[list[bytes]]:
        """Yield batches of whole lines until `stop` is set, then one final read (torn tail included).
        Sleeps between changes of the file's folder (or `poll_s` without change notification)."""
        watch = FolderWatch(self.path.parent, prefix=self.path.name, poll_s=self.poll_s)
        try:
            while not stop.is_set():
                batch = self.read_available()
                if batch:
                    yield batch
                else:
                    await watch.wait(stop=stop)
        finally:
            watch.close()
        batch = self.read_available(final=True)
        if batch:
            yield batch

    def close(self) -> None:
        self._close_fd()

    def statistics(self) -> FollowerStatistics:
        return FollowerStatistics(path=str(self.path), offset=self._offset, lines=self.lines,
                                  truncations=self.truncations, pending_bytes=len(self._pending))
