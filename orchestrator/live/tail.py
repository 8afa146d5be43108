"""The page's state from the journal of a run being written: the page fold fed the journal's new whole lines
on each call, so a page that opens after hours costs only the lines since the last page opened.

Reads the file; never writes. Blocks (file reads): async callers run it in a worker thread, one at a time.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.errors import JournalError
from orchestrator.journal import decode_event
from orchestrator.live.state import PageFold, PageState

__all__ = ["JournalTail"]

_CHUNK_BYTES = 8 << 20  # read this much at a time: memory stays bounded on a journal of gigabytes


class JournalTail:
    """`state()` folds what was appended since the last call and returns the page's state. Not thread-safe:
    one caller at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fold = PageFold()
        self._offset = 0
        self._line = 0

    def state(self) -> PageState:
        """The state of every whole line in the file now (a line still being written waits for the next call).
        Raises JournalError naming the line when one does not decode."""
        if not self.path.exists():
            return self.fold.state()
        with self.path.open("rb") as fh:
            fh.seek(self._offset)
            while chunk := fh.read(_CHUNK_BYTES):
                end = chunk.rfind(b"\n")
                if end < 0:
                    if len(chunk) < _CHUNK_BYTES:
                        break  # a torn or growing last line: the next call reads it whole
                    raise JournalError(f"{self.path}: line {self._line + 1} is longer than {_CHUNK_BYTES} bytes")
                for line in chunk[: end + 1].splitlines():
                    self._line += 1
                    if not line.strip():
                        continue
                    try:
                        self.fold.add(decode_event(line))
                    except ValueError as exc:  # msgspec's DecodeError and ValidationError
                        raise JournalError(f"{self.path}: line {self._line} does not decode: {exc}") from exc
                self._offset += end + 1
                fh.seek(self._offset)
        return self.fold.state()
