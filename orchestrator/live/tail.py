"""Journals being written, read incrementally: each call reads only the whole lines appended since the last
(`LineTail`); `JournalTail` folds a run's journal into the page's state. Reads the files, never writes; blocks
(file reads): async callers run it in a worker thread, one at a time."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import zstandard

from orchestrator.base.errors import JournalError
from orchestrator.live.state import PageFold, PageState
from orchestrator.spine.journal import LineDecompressor, decode_event, is_compact

__all__ = ["JournalTail", "LineTail"]

_CHUNK_BYTES = 8 << 20  # read this much at a time: memory stays bounded on a journal of gigabytes


class LineTail:
    """`lines()` yields (line number, line) for every whole line appended since the last call (of a compact
    journal: every line of its closed blocks). A file replaced at its path (another inode, or shorter than what
    was read) is read again from its start: `replaced` is then set until the caller clears it. Not thread-safe:
    one caller at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.line = 0
        self.replaced = False
        self._inode: int | None = None
        self._zstd = LineDecompressor() if is_compact(path) else None

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """A line still being written (no newline yet) waits for the next call. Raises JournalError for a line
        longer than the read chunk."""
        try:
            fh = self.path.open("rb")
        except FileNotFoundError:
            return
        with fh:
            st = os.fstat(fh.fileno())
            if self._inode is not None and (st.st_ino != self._inode or st.st_size < self.offset):
                self.offset, self.line, self.replaced = 0, 0, True
                self._zstd = LineDecompressor() if self._zstd is not None else None
            self._inode = st.st_ino
            fh.seek(self.offset)
            if self._zstd is not None:
                yield from self._compact(fh.read)
                return
            while chunk := fh.read(_CHUNK_BYTES):
                end = chunk.rfind(b"\n")
                if end < 0:
                    if len(chunk) < _CHUNK_BYTES:
                        break  # a torn or growing last line: the next call reads it whole
                    raise JournalError(f"{self.path}: line {self.line + 1} is longer than {_CHUNK_BYTES} bytes")
                for line in chunk[: end + 1].splitlines():
                    self.line += 1
                    if line.strip():
                        yield self.line, line
                self.offset += end + 1
                fh.seek(self.offset)


    def _compact(self, read: Callable[[int], bytes]) -> Iterator[tuple[int, bytes]]:
        assert self._zstd is not None
        while chunk := read(_CHUNK_BYTES):
            self.offset += len(chunk)  # the decompressor keeps what a half-written block holds so far
            try:
                lines = self._zstd.feed(chunk)
            except zstandard.ZstdError as exc:
                raise JournalError(f"{self.path}: corrupt compact journal near byte {self.offset}: {exc}") from None
            for line in lines:
                self.line += 1
                if line.strip():
                    yield self.line, line


class JournalTail:
    """`state()` folds what was appended since the last call and returns the page's state. Not thread-safe:
    one caller at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fold = PageFold()
        self._lines = LineTail(path)

    def state(self) -> PageState:
        """The state of every whole line in the file now (a line still being written waits for the next call).
        Raises JournalError naming the line when one does not decode."""
        for number, line in self._lines.lines():
            try:
                self.fold.add(decode_event(line))
            except ValueError as exc:  # msgspec's DecodeError and ValidationError
                raise JournalError(f"{self.path}: line {number} does not decode: {exc}") from exc
        return self.fold.state()
