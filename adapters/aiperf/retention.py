"""What a run keeps of AIPerf's artifact folder once AIPerf has ended: `inputs.json` (every payload, the audio
in base64) gives way to a note of its size and hash, and the raw export is zstd-compressed. Blocks (file I/O)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec
import zstandard

__all__ = ["INPUTS_NOTE", "InputsNote", "trim_artifacts"]

INPUTS_NOTE = "inputs.json.removed"
_RAW_EXPORT = "profile_export_raw.jsonl"
_CHUNK = 1 << 20
# zstd level 1: 0.16 CPU-s for a 94 MB raw export (600 requests) where gzip -6 took 3.0 s, and its file is still
# 2 % smaller (28.6 MB against 29.0); this runs in aqbench's own process after every AIPerf run.
_ZSTD_LEVEL = 1


class InputsNote(msgspec.Struct, frozen=True, kw_only=True):
    """What `inputs.json` was before it was removed: AIPerf built it from `inputs.jsonl` and the clips it
    names (the run's `clips.jsonl` gives each clip's hash), so these figures let a reader check a rebuild."""

    removed: str = "inputs.json"
    bytes: int
    sha256: str
    why: str = ("AIPerf's copy of every payload, the audio in base64; the run's inputs.jsonl and clips.jsonl "
                "name the same rows and clips (keep it with --keep-inputs or [workload] keep_inputs)")


def trim_artifacts(artifact_dir: Path) -> None:
    """Replace `inputs.json` by its note and compress `profile_export_raw.jsonl` to `.zst` (ingest reads it as it is);
    each step atomic (a temporary file renamed into place) and skipped when its file is absent."""
    inputs = artifact_dir / "inputs.json"
    if inputs.is_file():
        digest, size = hashlib.sha256(), 0
        with inputs.open("rb") as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
        note = InputsNote(bytes=size, sha256=digest.hexdigest())
        _replace(artifact_dir / INPUTS_NOTE, msgspec.json.format(msgspec.json.encode(note), indent=2) + b"\n")
        inputs.unlink()
    raw = artifact_dir / _RAW_EXPORT
    if raw.is_file():
        tmp = raw.with_name(f".{raw.name}.zst.{os.getpid()}.tmp")
        try:
            # No timestamp in a zstd frame: the same export compresses to the same bytes.
            with raw.open("rb") as src, open(tmp, "wb") as out:
                zstandard.ZstdCompressor(level=_ZSTD_LEVEL).copy_stream(src, out, size=raw.stat().st_size,
                                                                        read_size=_CHUNK, write_size=_CHUNK)
            os.replace(tmp, raw.with_name(raw.name + ".zst"))
        finally:
            tmp.unlink(missing_ok=True)
        raw.unlink()


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
