"""Ingest's inputs: glob expansion and chunked reading of plain, gzip and zstd files."""

from __future__ import annotations

import glob
import gzip
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

from orchestrator.base.errors import UsageError

__all__ = ["expand_inputs", "read_chunks", "line_blocks", "is_compressed"]

# 256 KiB reads keep a chunk and its lines in cache while they are decoded (1 MiB was slower).
_CHUNK = 1 << 18
_BLOCK = 1 << 20


def expand_inputs(specs: Iterable[str], *, known_name: Callable[[str], bool], allow_missing: bool = False) -> list[str]:
    """Files for the given paths, globs and folders (walked recursively for known names), in order;
    `-` stays `-` (standard input). Raises UsageError naming a spec that matched nothing, except with
    `allow_missing` (follow mode), where such a spec just gives nothing yet (a plain path is kept)."""
    out: list[str] = []
    seen: set[str] = set()
    for spec in specs:
        if spec == "-":
            found = ["-"]
        elif os.path.isdir(spec):
            found = sorted(
                os.path.join(root, name)
                for root, _dirs, names in os.walk(spec)
                for name in names
                if known_name(name)
            )
        elif os.path.exists(spec):
            found = [spec]
        else:
            found = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p))
            if not found and allow_missing:
                found = [] if glob.has_magic(spec) else [spec]
            elif not found:
                raise UsageError(f"ingest: {spec!r} is not a file, a folder or a glob that matches files")
        for path in found:
            if path not in seen:
                seen.add(path)
                out.append(path)
    return out


def _open(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    fh = open(path, "rb")  # noqa: SIM115  # returned open: the caller reads and closes it
    magic = fh.read(4)
    fh.seek(0)
    if magic[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=fh)  # type: ignore[return-value]
    if magic == b"\x28\xb5\x2f\xfd":
        import zstandard  # only zstd-compressed inputs need it: not loaded for every ingest


        return zstandard.ZstdDecompressor().stream_reader(fh, closefd=True)
    return fh


def read_chunks(path: str, size: int = _CHUNK) -> Iterator[bytes]:
    """The decompressed bytes of a file (or stdin for `-`) in chunks. Blocks on reads."""
    fh = _open(path)
    try:
        while chunk := fh.read(size):
            yield chunk
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def line_blocks(path: str, size: int = _BLOCK) -> Iterator[memoryview]:
    """The decompressed bytes of a file (or stdin for `-`) as blocks of whole lines, each block ending in a
    newline, then whatever follows the last newline (if anything). Read into one reused buffer: a block is valid
    until the next step (no allocation and no page faults per block: bench/ingest.py). A line longer than the
    buffer grows it. Blocks on reads."""
    fh = _open(path)
    buf = bytearray(size)
    view = memoryview(buf)
    kept = 0
    try:
        while got := fh.readinto(view[kept:]):  # type: ignore[attr-defined]
            total = kept + got
            end = buf.rfind(b"\n", 0, total) + 1
            if end:
                yield view[:end]
            kept = total - end
            if kept == len(buf):  # one line fills the buffer: a bigger one (the old one may still be viewed)
                grown = bytearray(2 * len(buf))
                grown[:kept] = view
                buf, view = grown, memoryview(grown)
            elif kept:
                view[:kept] = view[end:total]
        if kept:
            yield view[:kept]
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def is_compressed(path: str) -> bool:
    return path.endswith((".gz", ".zst", ".zstd"))
