"""What each campaign task hands qualify: the same options `aqbench qualify --model` builds, the owners'
gates included (a campaign once qualified without them)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from config_support import make_config

from orchestrator.commands.campaign import qualify_options

TASKS = "benchmarks:\n  mmlu: {gate: {margin: 1.5}}\ntasks:\n  audio_text_to_text:\n    absolute: [mmlu]\n"


def test_a_model_with_an_owners_source_gets_its_gates(tmp_path: Path) -> None:
    """The model naming a TRTMC checkout (here a bare repository) gets its tasks.yaml; the other gets none."""
    work = tmp_path / "trtmc"
    (work / "apps/aiperf_qual/config").mkdir(parents=True)
    (work / "apps/aiperf_qual/config/tasks.yaml").write_text(TASKS)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for args in (["-C", str(work), "init", "-q"], ["-C", str(work), "add", "-A"],
                 ["-C", str(work), "commit", "-qm", "x"], ["clone", "-q", "--bare", str(work), str(tmp_path / "t.git")]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    cfg = make_config(models=[
        {"name": "m1", "correctness": {"noninferiority": {"source": str(tmp_path / "t.git"), "benchmark": "mmlu"}}},
        {"name": "m2"}])
    opts = qualify_options(cfg, "m1")
    assert opts.models == ["m1"] and list(opts.owners) == ["m1"]
    assert opts.owners["m1"].tasks["benchmarks"]["mmlu"] == {"gate": {"margin": 1.5}}
    assert qualify_options(cfg, "m2").owners == {}
