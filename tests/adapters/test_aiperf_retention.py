"""What a run keeps of AIPerf's artifact folder: inputs.json gives way to a note of its size and hash, the raw
export is zstd-compressed (ingest reads it as it was), and a folder without them is left as it is."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec
import pytest
import zstandard

from adapters.aiperf.command import build_command
from adapters.aiperf.retention import INPUTS_NOTE, InputsNote, trim_artifacts
from orchestrator.cli import build_parser
from orchestrator.commands.keep_args import with_keep_inputs
from orchestrator.config import load_config

pytestmark = pytest.mark.inprocess
ROOT = Path(__file__).resolve().parents[2]


def test_inputs_note_and_compressed_raw_export(tmp_path: Path) -> None:
    """The note holds inputs.json's size and sha256; the .zst decompresses to the export byte for byte, and
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
                                                            "profile_export_raw.jsonl.zst"]
        gz.append((folder / "profile_export_raw.jsonl.zst").read_bytes())
        assert zstandard.ZstdDecompressor().decompress(gz[-1]) == raw
    assert gz[0] == gz[1]


def test_nothing_to_trim(tmp_path: Path) -> None:
    """A failed AIPerf that wrote neither file leaves the folder untouched, and a second trim changes nothing."""
    (tmp_path / "logs").mkdir()
    trim_artifacts(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["logs"]


def test_keep_inputs_reaches_the_command(tmp_path: Path) -> None:
    """`--keep-inputs` turns [workload] keep_inputs on, and the AIPerf command carries it to run_aiperf."""
    cfg = load_config(ROOT / "bench.toml")
    args = build_parser().parse_args(["qualify", "--keep-inputs"])
    kept = with_keep_inputs(cfg, args)
    assert (cfg.workload.keep_inputs, kept.workload.keep_inputs) == (False, True)
    assert with_keep_inputs(cfg, build_parser().parse_args(["qualify"])) is cfg
    for workload, want in ((cfg.workload, False), (kept.workload, True)):
        cmd = build_command(workload, base_url="http://127.0.0.1:1", model="m", input_file=tmp_path / "in.jsonl",
                            artifact_dir=tmp_path / "art", tokenizer=tmp_path / "tok")
        assert cmd.keep_inputs is want
