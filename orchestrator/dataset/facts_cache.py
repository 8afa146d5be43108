"""Facts about files kept between runs in one JSON file (a clip's decoded properties, the cache entry made from a
clip), so that an unchanged file is not decoded on every run. Blocks. A fact about a file holds only while the
file's stamp matches; an unreadable facts file is named in a warning and ignored, never trusted."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Generic, TypeVar

import msgspec

from orchestrator.spine.logs import get_logger

__all__ = ["FileStamp", "FactsCache", "stamp_of"]

T = TypeVar("T")
log = get_logger(__name__)


class FileStamp(msgspec.Struct, frozen=True, kw_only=True):
    """What moves whenever a file's content may have: where it is on disk, its size and its change times
    (`ctime_ns` moves on every write and on every restore of the modification time, and no user can set it)."""

    dev: int
    ino: int
    bytes: int
    mtime_ns: int
    ctime_ns: int


def stamp_of(path: Path) -> FileStamp:
    """The stamp of the file `path` names (a symbolic link's target). Raises OSError as os.stat does."""
    st = os.stat(path)
    return FileStamp(dev=st.st_dev, ino=st.st_ino, bytes=st.st_size, mtime_ns=st.st_mtime_ns,
                     ctime_ns=st.st_ctime_ns)


class _Stored(msgspec.Struct, Generic[T], kw_only=True):
    version: str
    facts: dict[str, T]


class FactsCache(Generic[T]):
    """The facts of one kind in the file `path`, read once at construction; `save` writes them back whole (a
    temporary file renamed into place: runs that save together each leave a whole file, the last one's).

    `version` names what the facts depend on beyond their key (the format, the decoder's version): a file of
    another version is dropped without a word and rewritten on `save`.
    """

    def __init__(self, path: Path, kind: type[T], version: str) -> None:
        self.path = path
        self.version = version
        self._changed = False
        self._facts: dict[str, T] = self._read(kind)

    def _read(self, kind: type[T]) -> dict[str, T]:
        try:
            raw = self.path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # none kept yet (the folder, if not one, is said on save)
            return {}
        except OSError as exc:
            self._ignored(f"cannot read it: {exc.strerror}")
            return {}
        try:
            stored = msgspec.json.decode(raw, type=_Stored[kind])  # type: ignore[valid-type]
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            self._ignored(f"not a facts file of this aqbench ({exc})")
            return {}
        if stored.version != self.version:
            self._changed = True
            return {}
        facts: dict[str, T] = stored.facts
        return facts

    def _ignored(self, why: str) -> None:
        self._changed = True  # rewritten by this run's `save`
        log.warning("facts_cache_ignored", path=str(self.path), reason=why,
                    next_step="nothing to do: every fact in it is found again and the file rewritten; "
                              "delete the file if this warning repeats")

    def get(self, key: str) -> T | None:
        return self._facts.get(key)

    def put(self, key: str, value: T) -> None:
        if self._facts.get(key) != value:
            self._facts[key] = value
            self._changed = True

    def save(self) -> None:
        """Write the facts back if any changed. A folder that cannot be written is said in a warning: the facts
        are only a shortcut, so the run goes on without them."""
        if not self._changed:
            return
        data = msgspec.json.encode(_Stored(version=self.version, facts=self._facts))
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            log.warning("facts_cache_not_saved", path=str(self.path), reason=exc.strerror,
                        next_step="the next run finds these facts again; make the folder writable to keep them")
        self._changed = False
