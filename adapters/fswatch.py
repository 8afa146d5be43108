"""Wait until something in one folder changes: inotify readiness on Linux, a timed poll elsewhere."""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from pathlib import Path

import anyio

__all__ = ["FolderWatch"]

# <sys/inotify.h>: what a writer, a creator, a renamer or a remover of a folder's files triggers.
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF, _IN_IGNORED = 0x400, 0x800, 0x8000
_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
         | _IN_DELETE_SELF | _IN_MOVE_SELF)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then `len` bytes of name
_READ_BYTES = 64 * 1024


def _load_inotify() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _load_inotify()


# A waiter sleeps on the inotify descriptor through the event loop's selector, so an idle watch costs nothing
# and a write wakes it within microseconds. Where inotify is missing (not Linux, no libc symbol, the
# descriptor limit reached, the folder not there yet) `wait` sleeps `poll_s` instead.
class FolderWatch:
    """Wakes `wait` when a file in `folder` is created, written, truncated, renamed or removed.

    With `prefix`, only files whose names start with it count (AIPerf writes megabytes of other
    files beside its record export). Not recursive. One waiter at a time. `notified` says whether
    inotify is in use right now.
    """

    def __init__(self, folder: str | Path, *, prefix: str = "", poll_s: float = 0.01,
                 backstop_s: float = 1.0) -> None:
        self.folder = Path(folder)
        self.prefix = os.fsencode(prefix)
        self.poll_s = poll_s
        self.backstop_s = backstop_s
        self._fd: int | None = None
        # One buffer for every read: os.read would allocate (and free) 64 KiB per call, several times a
        # second for a soak's hours, which fragments the C heap (issue 23).
        self._buf = bytearray(_READ_BYTES)
        self._open()

    @property
    def notified(self) -> bool:
        return self._fd is not None

    def _open(self) -> None:
        if _LIBC is None:
            return
        fd = _LIBC.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return  # EMFILE and friends: poll instead
        if _LIBC.inotify_add_watch(fd, os.fsencode(self.folder), _MASK) < 0:
            os.close(fd)  # the folder is not there yet: poll, and try again at the next wait
            return
        self._fd = fd

    def _drain(self) -> bool:
        """Consume the queued notifications: whether one was about a file of interest. Drops the
        descriptor when the folder itself went away (that counts too: the caller should look)."""
        assert self._fd is not None
        gone = relevant = False
        data = self._buf
        while True:
            try:
                size = os.readv(self._fd, [data])
            except BlockingIOError:
                break
            offset = 0
            while offset + _EVENT.size <= size:
                _, mask, _, length = _EVENT.unpack_from(data, offset)
                start = offset + _EVENT.size
                gone = gone or bool(mask & (_IN_IGNORED | _IN_DELETE_SELF | _IN_MOVE_SELF))
                relevant = relevant or data.startswith(self.prefix, start, start + length)
                offset = start + length
        if gone:
            self.close()
        return relevant or gone

    async def _wait_readable(self, stop: anyio.Event | None) -> None:
        assert self._fd is not None
        if stop is None:
            await anyio.wait_readable(self._fd)
            return
        async with anyio.create_task_group() as tg:

            async def on_stop() -> None:
                await stop.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(on_stop)
            await anyio.wait_readable(self._fd)
            tg.cancel_scope.cancel()

    # Even with inotify it returns after `backstop_s`: writes inotify cannot see (a network filesystem written
    # from another host) are then still read, only later.
    async def wait(self, *, stop: anyio.Event | None = None) -> None:
        """Return after a change in the folder, after `stop` is set, or after `backstop_s` (`poll_s`
        without inotify), whichever comes first; at once when the watch was only just (re)opened."""
        if stop is not None and stop.is_set():
            return
        if self._fd is None:
            self._open()
            if self._fd is not None:
                return  # watched from now on; what changed while unwatched is for the caller to read
            with anyio.move_on_after(self.poll_s):
                if stop is not None:
                    await stop.wait()
                else:
                    await anyio.sleep_forever()
            return
        with anyio.move_on_after(self.backstop_s):
            while True:
                await self._wait_readable(stop)
                if self._drain() or (stop is not None and stop.is_set()):
                    return
        if self._fd is not None:
            self._drain()

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
