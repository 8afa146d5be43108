"""`aqbench ledger` and `aqbench publish` over real runs: one small qualify of the reference model and one
small run-aiperf (the only two real AIPerf runs here), made once per module with planted secrets."""

from __future__ import annotations

import getpass
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from test_qualify import MINI_ITEMS, config, mini_dataset

from orchestrator.config import PublishConfig
from orchestrator.events import RunStarted
from orchestrator.ledger import build_ledger, load_inventory, read_run
from orchestrator.publish.write import (
    gather_facts,
    render_publication,
    write_publication,
)
from orchestrator.spine.journal import read_journal
from orchestrator.spine.redaction import REDACTED

ROOT = Path(__file__).resolve().parents[2]

# Functional assertions only (what the files hold): runs beside the serial lane (tests/conftest.py, `beside`), all on
# one worker (one xdist group), so that the module's two real runs are made once.
pytestmark = [pytest.mark.aiperf, pytest.mark.slow, pytest.mark.timeout(480), pytest.mark.beside,
              pytest.mark.xdist_group("publish-runs")]

ENV_SECRET = "plantedEnvSecret-8c1d"
CONFIG_SECRET = "hf_plantedConfigSecret31"
RUN_AIPERF = """
[run]
output_dir = "{out}"
name = "load"

[server]
kind = "reference"
replicas = 2
startup_timeout_s = 120.0
stop_grace_s = 10.0
env = {{HF_TOKEN = "{secret}"}}

[[models]]
name = "reference-audioqa"
family = "aqbench-reference"
checkpoint = "aqbench/reference-cascade"
profile = "reference-cascade-cpu-int8"
precision = "int8"

[models.correctness]
min_pass_rate = 0.0

[dataset]
path = "{dataset}"

[workload]
warmup_requests = 2
requests = 4
concurrency = 2
arms = ["audio"]
deadline_s = 300.0
"""
# The inventory's bench.toml, with or without the aqa model (shared with tests/orchestrator/ledger_support.py).
BENCH = (ROOT / "tests/data/configs/inventory-bench.template.toml").read_text()
AQA = (ROOT / "tests/data/configs/aqa-model.toml").read_text()


def aqbench(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AQBENCH_TEST_API_KEY": ENV_SECRET}
    return subprocess.run([sys.executable, "-m", "orchestrator", "--log-level", "warning", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env, check=False)


@pytest.fixture(scope="module")
def qualify_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real qualify of the reference model on 8 items with 8 AIPerf requests, a secret in `[server] env`
    and another in aqbench's own environment."""
    tmp = tmp_path_factory.mktemp("qualify")
    cfg = config(tmp, dataset=mini_dataset(tmp, MINI_ITEMS), replace={
        "requests = 48": "requests = 8", "warmup_requests = 4": "warmup_requests = 2",
        "replicas = 2": f'replicas = 2\nenv = {{HF_TOKEN = "{CONFIG_SECRET}"}}'})
    proc = aqbench("qualify", "--config", str(cfg), timeout=400)
    assert proc.returncode == 0, proc.stderr[-4000:]
    [run] = list((tmp / "runs").iterdir())
    return run


@pytest.fixture(scope="module")
def load_run(tmp_path_factory: pytest.TempPathFactory, qualify_run: Path) -> Path:
    """A real run-aiperf of 4 requests against the reference server, on the qualify run's dataset."""
    tmp = tmp_path_factory.mktemp("load")
    cfg = tmp / "bench.toml"
    cfg.write_text(RUN_AIPERF.format(out=tmp / "runs", secret=CONFIG_SECRET, dataset=qualify_run.parents[1] / "mini"))
    proc = aqbench("run-aiperf", "--config", str(cfg), timeout=400)
    assert proc.returncode == 0, proc.stderr[-4000:]
    [run] = list((tmp / "runs").iterdir())
    return run


# Our own manifests in TRTMC's shapes (see tests/orchestrator/inventory_support.py): a transcription-only
# checkpoint (unsupported), an audio-QA one (blocked, or planned once configured), a vision-language candidate.
MANIFESTS = {
    "families/whisperish/tests/manifests/whisperish-tiny-fp16.json": {
        "name": "whisperish-tiny-fp16", "hf_id": "acme/whisperish-tiny", "family": "whisperish",
        "task_strategy": "speech_to_text", "user_contract": "exact_transcript", "precision": "fp16",
        "test_input_audio": "data/clip.wav"},
    "families/aqaish/tests/manifests/aqaish-1b.json": {
        "name": "aqaish-1b", "hf_id": "acme/aqaish-1b", "family": "aqaish", "task_strategy": "audio_text_to_text",
        "precision": "fp16", "testcases": [{"name": "t0", "prompt": "How many beeps?",
                                            "test_input_audio": "data/beeps.wav"}]},
    "families/phi4ish/tests/manifests/phi4ish-multimodal.json": {
        "name": "phi4ish-multimodal", "hf_id": "acme/Phi4ish-multimodal-instruct", "family": "phi4ish",
        "task_strategy": "vision_language_generation", "precision": "bf16",
        "testcases": [{"name": "t0", "prompt": "What is shown?", "test_image": "data/cat.png"}]},
}


def inventory(tmp: Path, *, configure_aqa: bool) -> Path:
    """The real `aqbench inventory --json` over a fixture checkout of MANIFESTS."""
    for rel, manifest in MANIFESTS.items():
        (tmp / "trtmc" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "trtmc" / rel).write_text(json.dumps(manifest))
    trtmc = tmp / "trtmc"
    (tmp / "bench.toml").write_text(BENCH.format(extra=AQA if configure_aqa else ""))
    out = tmp / "inv.json"
    proc = aqbench("inventory", "--trtmc", str(trtmc), "--config", str(tmp / "bench.toml"), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def test_ledger_over_a_real_inventory_and_qualify_run(tmp_path: Path, qualify_run: Path) -> None:
    """With an unrun configured checkpoint the ledger cannot close and lists it; with every row accounted
    for (the reference model qualified by the real run) it can close."""
    blocked = aqbench("ledger", "--inventory", str(inventory(tmp_path / "a", configure_aqa=True)), str(qualify_run))
    assert blocked.returncode == 1, blocked.stderr
    assert "**Can the group close? no.**" in blocked.stdout
    assert "- acme/aqaish-1b: unrun: configured but never run" in blocked.stdout
    assert "| acme/whisperish-tiny | - | whisperish-tiny-fp16 | transcription-only | unsupported | yes | inventory |" \
        in blocked.stdout
    assert "aqbench/reference-cascade:" not in blocked.stdout.split("## Checkpoints")[0]
    out = tmp_path / "ledger.json"
    ok = aqbench("ledger", "--inventory", str(inventory(tmp_path / "b", configure_aqa=False)), str(qualify_run),
                 "--json", str(out))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    led = json.loads(out.read_text())
    [ref] = [ln for ln in led["lines"] if ln["checkpoint"] == "aqbench/reference-cascade"]
    assert (ref["status"], ref["final"], ref["source"]) == ("aiperf-qualified", True, f"run {qualify_run.name}")
    assert led["can_close"] and led["blockers"] == []


def test_planted_secrets_never_reach_the_run_files(qualify_run: Path, load_run: Path) -> None:
    """The `[server] env` secret and the environment secret are in none of the files aqbench writes, and
    the journal shows where the configured one was redacted."""
    for run in (qualify_run, load_run):
        for name in ("events.jsonl", "aqbench.log", "report.json", "report.md", "report.html", "server.log"):
            path = run / name
            if path.exists():
                text = path.read_text(errors="replace")
                assert CONFIG_SECRET not in text and ENV_SECRET not in text, f"secret in {path}"
        events, _ = read_journal(run / "events.jsonl")
        started = next(e for e in events if isinstance(e, RunStarted))
        assert started.config is not None and started.config.server.env == {"HF_TOKEN": REDACTED}


def _private_words(text: str) -> list[str]:
    """Absolute filesystem paths, this host's name, this user's name and the planted secrets in `text`."""
    found = re.findall(r"(?<![\w<>:/.-])/(?:tmp|root|home|work|usr|opt|var|srv)/\S*", text)
    for word in (socket.gethostname(), getpass.getuser()):
        found += re.findall(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text)
    return found + [s for s in (ENV_SECRET, CONFIG_SECRET) if s in text]


def test_publish_qualify_and_run_aiperf(tmp_path: Path, qualify_run: Path, load_run: Path) -> None:
    """publish writes the rows and the paste-ready comment for both runs, with no absolute path, host
    name, user name or planted secret in any file."""
    inv = inventory(tmp_path / "inv", configure_aqa=False)
    out = tmp_path / "pub"
    proc = aqbench("publish", str(qualify_run), str(load_run), "--ledger", str(inv), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted([
        "commands.md", "comment.md", "ledger.json", "ledger.md", "rows.json",
        f"runs/{qualify_run.name}/events.jsonl", f"runs/{load_run.name}/events.jsonl"])
    comment = (out / "comment.md").read_text()
    assert "| client request_latency | server public_task_call_wall |" in comment
    assert ("| reference-audioqa | reference-cascade-cpu-int8 | aqbench/reference-cascade | int8 | audio-qa ("
            in comment) and "| aiperf-qualified | http 8/8 (100.0%)" in comment
    assert "| reference-audioqa (reference-audioqa/aiperf-1) |" in comment and load_run.name in comment
    assert "**Group ledger: can close**" in comment
    rows = json.loads((out / "rows.json").read_text())
    assert [r["run_id"] for r in rows["runs"]] == [qualify_run.name, load_run.name]
    assert rows["runs"][0]["rows"][0]["status"] == "aiperf-qualified"
    commands = (out / "commands.md").read_text()
    assert "--url http://127.0.0.1:<port>" in commands and "<venv>/bin/aiperf profile" in commands
    for path in out.rglob("*"):
        if path.is_file():
            assert _private_words(path.read_text()) == [], path.name
    # The published journal is a journal: the report folds from it to the same row.
    published, torn = read_journal(out / "runs" / qualify_run.name / "events.jsonl")
    assert torn is None and isinstance(published[0], RunStarted)


def test_scan_catches_each_planted_detail_when_redaction_is_bypassed(
        tmp_path: Path, qualify_run: Path, load_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written without scrubbing, the real runs' paths and planted host, user, IP and secrets are each found
    by file and line; scrubbed (with the planted folder as a root), nothing is found."""
    monkeypatch.setenv("AQBENCH_TEST_API_KEY", ENV_SECRET)
    runs = [read_run(qualify_run), read_run(load_run)]
    inv = load_inventory(inventory(tmp_path / "inv", configure_aqa=False))
    content = render_publication(runs, build_ledger(inv, runs))
    planted = ["path /srv/private-share/clip.wav", f"host {socket.gethostname()}", f"user {getpass.getuser()}",
               "peer 10.20.30.40", f"key {ENV_SECRET}", "-H 'Authorization: Bearer plantedBearer123456'"]
    comment = str(content["comment.md"]) + "\n".join(planted) + "\n"
    content["comment.md"] = comment
    first = comment.count("\n") - len(planted) + 1
    cfg = PublishConfig(roots={"share": "/srv/private-share"})
    facts = gather_facts(runs, cfg, inv)
    raw = write_publication(content, tmp_path / "raw", facts, scrub=False)
    found = {(f.file, f.line, f.kind) for f in raw.findings}
    expected = ["absolute path", "host name", "user name", "IP address", "known secret value",
                "bearer or basic credential"]
    for offset, kind in enumerate(expected):
        assert ("comment.md", first + offset, kind) in found, (kind, sorted(found))
    assert {f.file for f in raw.findings if f.kind == "absolute path"} >= {"rows.json", "commands.md"}
    clean = write_publication(content, tmp_path / "clean", facts)
    assert clean.findings == []
    tail = (tmp_path / "clean" / "comment.md").read_text().splitlines()[-len(planted):]
    assert tail == ["path <share>/clip.wav", "host <host>", "user <user>", "peer <ip>", f"key {REDACTED}",
                    f"-H 'Authorization: Bearer {REDACTED}'"]
