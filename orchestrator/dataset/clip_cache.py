"""The clips as sent, stored once per content: `<cache>/<sha256>.<format>`, written by atomic rename so that
concurrent runs share it, and the manifest (`clips.jsonl`) by which a run names the clips it sent. Blocks."""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import Iterable
from pathlib import Path

import msgspec

from orchestrator.config import RunConfig

__all__ = ["CLIP_MANIFEST", "CACHE_SUFFIX", "FACTS_FOLDER", "ClipSent", "ClipCache", "append_manifest",
           "clip_cache_dir", "facts_dir", "read_manifest", "referenced_hashes"]

CLIP_MANIFEST = "clips.jsonl"
"""A run's list of the clips it sent, one `ClipSent` a line, in the folder given to `prepare_arms`."""
CACHE_SUFFIX = "-clips"
"""The default cache sits beside `[run] output_dir`, named after it (`runs` -> `runs-clips`): the output folder
holds run folders only, and each output folder has its own cache."""
FACTS_FOLDER = "facts"
"""The cache's folder of facts kept between runs (each dataset's decoded clip properties, the entry made from each
clip): a shortcut only, rebuilt by the next run when removed; `entries` and pruning pass it by."""


class ClipSent(msgspec.Struct, frozen=True, kw_only=True):
    """One request's clip as sent: its content hash and size, and where the bytes are (in the clip cache, or
    the dataset's own file when the clip went out as it is)."""

    key: str
    sha256: str
    bytes: int
    format: str
    path: str


_line_encoder = msgspec.json.Encoder()
_line_decoder = msgspec.json.Decoder(ClipSent)


def clip_cache_dir(run: RunConfig) -> Path:
    """The cache folder of a configuration's [run]: `clip_cache`, or `<output_dir>-clips` beside it when unset."""
    if run.clip_cache:
        return Path(run.clip_cache)
    out = Path(run.output_dir).resolve()
    return out.with_name(out.name + CACHE_SUFFIX)


def facts_dir(run: RunConfig) -> Path:
    """The folder of facts kept between runs, in the clip cache of a configuration's [run]."""
    return clip_cache_dir(run) / FACTS_FOLDER


class ClipCache:
    """A folder of clips named by the sha256 of their bytes. `put` is safe across processes: an entry is
    written under a temporary name and renamed into place, so a reader sees a whole file or none."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).resolve()

    def path_of(self, sha256: str, fmt: str) -> Path:
        return self.folder / f"{sha256}.{fmt}"

    def put(self, data: bytes, fmt: str) -> tuple[Path, str]:
        """Store `data` (the bytes of a `fmt` file) unless an entry of that content is there; returns its path
        and hash. A reused entry's mtime is refreshed: pruning spares entries touched lately (`prune`)."""
        digest = hashlib.sha256(data).hexdigest()
        found = self.existing(digest, fmt, len(data))
        if found is not None:
            return found, digest
        path = self.path_of(digest, fmt)
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".{digest}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)  # same content from a concurrent writer: either rename wins, both whole
        finally:
            tmp.unlink(missing_ok=True)
        return path, digest

    def existing(self, sha256: str, fmt: str, size: int) -> Path | None:
        """The entry of that content when it is there whole (by its size), its mtime refreshed as `put` does."""
        path = self.path_of(sha256, fmt)
        try:
            if path.stat().st_size == size:
                os.utime(path)
                return path
        except FileNotFoundError:
            pass
        return None

    def facts_folder(self) -> Path:
        return self.folder / FACTS_FOLDER

    def entries(self) -> list[Path]:
        """Every stored clip (temporary files aside)."""
        try:
            return sorted(p for p in self.folder.iterdir() if p.is_file() and not p.name.startswith("."))
        except FileNotFoundError:
            return []

    def prune(self, keep: set[str], *, grace_s: float = 3600.0, dry_run: bool = False) -> list[Path]:
        """Remove the entries whose hash is not in `keep` and that nobody wrote or reused within `grace_s`
        (a run starting now may hold one before its manifest names it); returns those removed (or, with
        `dry_run`, those that would be)."""
        now = time.time()
        gone: list[Path] = []
        for entry in self.entries():
            if entry.name.split(".", 1)[0] in keep:
                continue
            try:
                if now - entry.stat().st_mtime < grace_s:
                    continue
                if not dry_run:
                    entry.unlink()
            except FileNotFoundError:
                continue
            gone.append(entry)
        return gone


def append_manifest(folder: Path, clips: Iterable[ClipSent]) -> None:
    """Append `clips` to `folder/clips.jsonl` in one write (O_APPEND: a concurrent writer's lines stay whole)."""
    buf = bytearray()
    for clip in clips:
        _line_encoder.encode_into(clip, buf, len(buf))
        buf += b"\n"
    if not buf:
        return
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / CLIP_MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, bytes(buf))
    finally:
        os.close(fd)


def read_manifest(path: Path) -> list[ClipSent]:
    """A manifest's lines; a torn last line (a run killed mid-write) is skipped."""
    out: list[ClipSent] = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(_line_decoder.decode(line))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
    return out


def referenced_hashes(run_dirs: Iterable[Path]) -> set[str]:
    """The hashes that these runs' manifests name (every `clips.jsonl` under each run folder)."""
    found: set[str] = set()
    for run in run_dirs:
        for manifest in run.rglob(CLIP_MANIFEST):
            found.update(c.sha256 for c in read_manifest(manifest))
    return found
