"""What a run keeps of AIPerf's artifact folder: inputs.json gives way to a note of its size and hash, the raw
export is gzipped (ingest reads it as it was), and a folder without them is left as it is."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import msgspec
import pytest

from adapters.aiperf.retention import INPUTS_NOTE, InputsNote, trim_artifacts

pytestmark = pytest.mark.inprocess


def test_inputs_note_and_gzipped_raw_export(tmp_path: Path) -> None:
    """The note holds inputs.json's size and sha256; the gzip decompresses to the export byte for byte, and
    two trims of the same export give the same bytes (no timestamp inside)."""
    inputs = b'{"data": [' + b'"UklGRi4AAABXQVZF",' * 5000 + b'"x"]}'
    raw = b"".join(b'{"metadata":{"x_request_id":"%d"},"payload":"AAAA"}\n' % i for i in range(200))
    gz: list[bytes] = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "inputs.json").write_bytes(inputs)
        (folder / "profile_export_raw.jsonl").write_bytes(raw)
        (folder / "profile_export.jsonl").write_bytes(b"{}\n")
        trim_artifacts(folder)
        note = msgspec.json.decode((folder / INPUTS_NOTE).read_bytes(), type=InputsNote)
        assert note.bytes == len(inputs) and note.sha256 == hashlib.sha256(inputs).hexdigest()
        assert sorted(p.name for p in folder.iterdir()) == [INPUTS_NOTE, "profile_export.jsonl",
                                                            "profile_export_raw.jsonl.gz"]
        gz.append((folder / "profile_export_raw.jsonl.gz").read_bytes())
        assert gzip.decompress(gz[-1]) == raw
    assert gz[0] == gz[1]


def test_nothing_to_trim(tmp_path: Path) -> None:
    """A failed AIPerf that wrote neither file leaves the folder untouched, and a second trim changes nothing."""
    (tmp_path / "logs").mkdir()
    trim_artifacts(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["logs"]
