"""A soak probes the capability before its load: a server that refuses audio stops it at once, `unsupported`,
with the evidence, before any AIPerf process starts."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_qualify import MINI_ITEMS, ROOT, config, mini_dataset, stub_argv

from orchestrator.events import AiperfStarted, CapabilityProbed, ModelResult, PhaseFinished, RunFinished
from orchestrator.spine.journal import journal_path, read_journal

pytestmark = pytest.mark.beside

_OTHER = ('\n[[models]]\nname = "whisper-like"\nfamily = "whisper"\ncheckpoint = "openai/whisper-tiny"\n'
          'native_task = "speech_transcription"\n[models.correctness]\nmin_pass_rate = 0.9\n')


@pytest.mark.slow
def test_a_server_refusing_audio_stops_the_soak_at_once_unsupported(tmp_path: Path) -> None:
    """`aqbench soak --duration 8h` against a server that 400s every audio part (as trtmc-server does): the
    capability probe stops the soak before any load, exit 1, the model `unsupported` with the 400 body as
    evidence (journal, soak.md and the console), and no AIPerf process ever starts."""
    cfg = config(tmp_path, server_argv=stub_argv("reject-audio"), kind="trtmc-server",
                 dataset=mini_dataset(tmp_path, MINI_ITEMS), extra_models=_OTHER)
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "orchestrator", "--log-level", "warning", "soak", "--config", str(cfg),
                          "--model", "whisper-like", "--duration", "8h"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    took = time.monotonic() - started
    assert out.returncode == 1, out.stderr[-3000:]
    [run_dir] = sorted((tmp_path / "runs").iterdir())
    events, torn = read_journal(journal_path(run_dir))
    assert torn is None
    [result] = [e for e in events if isinstance(e, ModelResult)]
    assert (result.status, result.failed_stage) == ("unsupported", "capability")
    assert result.row.reason.startswith("unsupported at the capability probe, before any load: ")
    transport = next(e for e in events if isinstance(e, CapabilityProbed) and e.check == "transport")
    assert not transport.passed and "400" in transport.reason
    soak = next(e for e in events if isinstance(e, PhaseFinished) and e.phase == "soak")
    assert soak.outcome == "unsupported"
    assert not [e for e in events if isinstance(e, AiperfStarted)]
    assert isinstance(events[-1], RunFinished) and events[-1].exit_code == 1 and events[-1].status == "failed"
    assert "soak: unsupported at the capability probe, before any load" in out.stderr
    assert "ends the soak there, unsupported (exit 1)" in out.stderr  # the plan said so first
    assert "unsupported at the capability probe" in (run_dir / "soak.md").read_text()
    assert took < 120, took
