"""The mark of a run still being written: an exclusive lock on `<run>/.writing`, held for the run's life and
released by the kernel when its process ends, however it ends. Blocks (one open and one flock)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

__all__ = ["WRITING_MARK", "WritingMark", "is_being_written"]

WRITING_MARK = ".writing"


class WritingMark:
    """`mark = WritingMark(run_dir)` takes the lock (the pid written in the file, for a person); `release()`
    drops it and removes the file. A second mark on the same folder raises BlockingIOError."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / WRITING_MARK
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            raise
        os.ftruncate(self._fd, 0)
        os.write(self._fd, f"{os.getpid()}\n".encode())

    def release(self) -> None:
        if self._fd < 0:
            return
        # Unlinked while held: a reader that opens it now sees no file, or a lock it cannot take.
        self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = -1


def is_being_written(run_dir: Path) -> bool | None:
    """True when a live process holds the folder's mark, False when the mark is there and free (its writer
    died), None when there is no mark (a run that ended in order, or one written before marks existed)."""
    try:
        fd = os.open(run_dir / WRITING_MARK, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
