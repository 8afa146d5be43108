"""One real AIPerf 0.13.0 run against the reference server: its records carry our id and Server-Timing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from _reference_server import DATASET, reference_server

ROWS = [("meeting.wav", "On which day of the week is the meeting?", "thursday"),
        ("beeps-5.wav", "How many beeps do you hear?", "5"),
        ("tones-up.wav", "Which tone is higher, the first or the second?", "second")]


def _tokenizer(path: Path) -> Path:
    """A tiny offline WordLevel tokenizer (AIPerf always loads one; the hub is unreachable)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[PAD]": 1}
    for row in ROWS:
        for word in (row[1] + " " + row[2]).lower().replace("?", " ").replace(",", " ").split():
            vocab.setdefault(word, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]").save_pretrained(path)
    return path


@pytest.mark.aiperf
@pytest.mark.slow
def test_aiperf_run_records_carry_request_id_and_server_timing(tmp_path):
    """AIPerf sends input_audio rows; every profiling record's X-Request-ID has exactly one server
    record, the response headers carry it and Server-Timing, and the answers are right."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"session_id": f"row-{i}", "text": q,
                                        "audio": str((DATASET / "audio" / f).resolve())}) + "\n"
                            for i, (f, q, _) in enumerate(ROWS)))
    # Short path on purpose: AIPerf puts ZMQ ipc sockets under $TMPDIR, and a path over 107 bytes makes
    # it fail to start yet exit 0 with no records (seen with pytest's long tmp_path).
    artifacts = Path(tempfile.mkdtemp(prefix="aqap-", dir="/tmp"))
    try:
        _run(tmp_path, rows, artifacts)
    finally:
        shutil.rmtree(artifacts, ignore_errors=True)


def _run(tmp_path: Path, rows: Path, artifacts: Path) -> None:
    tokenizer = _tokenizer(tmp_path / "tokenizer")
    with reference_server(tmp_path, "--replicas", "1") as s:
        cmd = [str(Path(sys.executable).with_name("aiperf")), "profile", "--model", "ref-test",
               "--url", s.url, "--endpoint-type", "chat", "--input-file", str(rows),
               "--custom-dataset-type", "single_turn", "--dataset-sampling-strategy", "sequential",
               "--tokenizer", str(tokenizer), "--ui-type", "none", "--no-server-metrics",
               "--no-gpu-telemetry", "--request-count", "3", "--concurrency", "1",
               "--export-level", "raw", "--export-http-trace",
               "--artifact-dir", str(artifacts), "--random-seed", "0"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240,
                              env={**os.environ, "TMPDIR": str(artifacts)})
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        deadline = time.monotonic() + 30
        while not (artifacts / ".aiperf_results_ready.json").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        s.proc.send_signal(signal.SIGINT)
        assert s.proc.wait(timeout=20) == 0
    export = artifacts / "profile_export.jsonl"
    assert export.exists(), f"no {export}: {sorted(os.listdir(artifacts))}\n{proc.stdout[-3000:]}"
    records = [json.loads(line) for line in export.read_text().splitlines()]
    profiling = [r for r in records if r["metadata"]["benchmark_phase"] == "profiling"]
    assert len(profiling) == 3 and not any(r.get("error") for r in profiling)
    server = {r["request_id"]: r for r in map(json.loads, s.records.read_text().splitlines())}
    for rec in profiling:
        rid = rec["metadata"]["x_request_id"]
        assert server[rid]["status"] == 200 and server[rid]["audio"]["format"] == "wav"
        headers = {k.lower(): v for k, v in rec["trace_data"]["response_headers"].items()}
        assert headers["x-request-id"] == rid
        dur = float(headers["server-timing"].split("dur=")[1])
        assert dur == pytest.approx(server[rid]["model_call_ms"], abs=0.01)
    raw = [json.loads(line) for line in (artifacts / "profile_export_raw.jsonl").read_text().splitlines()]
    answers = {r["metadata"]["conversation_id"]: json.dumps(r) for r in raw
               if r["metadata"]["benchmark_phase"] == "profiling"}
    for i, (_, _, gold) in enumerate(ROWS):
        assert f'\\"content\\": \\"{gold}\\"' in answers[f"row-{i}"] or f'"content": "{gold}"' in answers[f"row-{i}"]
