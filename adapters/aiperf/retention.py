"""What a run keeps of AIPerf's artifact folder once AIPerf has ended: `inputs.json` (every payload, the audio
in base64) gives way to a note of its size and hash, and the raw export is gzipped. Blocks (file I/O)."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
from pathlib import Path

import msgspec

__all__ = ["INPUTS_NOTE", "InputsNote", "trim_artifacts"]

INPUTS_NOTE = "inputs.json.removed"
_RAW_EXPORT = "profile_export_raw.jsonl"
_CHUNK = 1 << 20


class InputsNote(msgspec.Struct, frozen=True, kw_only=True):
    """What `inputs.json` was before it was removed: AIPerf built it from `inputs.jsonl` and the clips it
    names (the run's `clips.jsonl` gives each clip's hash), so these figures let a reader check a rebuild."""

    removed: str = "inputs.json"
    bytes: int
    sha256: str
    why: str = ("AIPerf's copy of every payload, the audio in base64; the run's inputs.jsonl and clips.jsonl "
                "name the same rows and clips (keep it with --keep-inputs or [workload] keep_inputs)")


def trim_artifacts(artifact_dir: Path) -> None:
    """Replace `inputs.json` by its note and gzip `profile_export_raw.jsonl` (ingest reads `.gz` as it is);
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
        tmp = raw.with_name(f".{raw.name}.gz.{os.getpid()}.tmp")
        try:
            # mtime=0: the same export gzips to the same bytes
            with raw.open("rb") as src, open(tmp, "wb") as out, gzip.GzipFile(
                    filename=raw.name, mode="wb", fileobj=out, compresslevel=6, mtime=0) as dst:
                shutil.copyfileobj(src, dst, _CHUNK)
            os.replace(tmp, raw.with_name(raw.name + ".gz"))
        finally:
            tmp.unlink(missing_ok=True)
        raw.unlink()


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
