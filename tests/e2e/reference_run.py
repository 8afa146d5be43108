"""What the e2e tests of run-aiperf, compare, ab and sweep share: a bench.toml for the reference server on
audioqa-v1 (one model, two replicas) and `aqbench` run as a subprocess from the repository root."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "datasets" / "audioqa-v1"
# The reference server's argv as bench.toml writes it, for configs that add fault flags to it.
REFERENCE_ARGV = ["{python}", "-m", "adapters.reference", "--host", "{host}", "--port", "{port}", "--model-name",
                  "{model}", "--records", "{records}", "--replicas", "{replicas}"]

_CONFIG = """
[run]
output_dir = "{out}"
name = "{name}"

[server]
kind = "reference"
{argv}replicas = 2
startup_timeout_s = 120.0
{stop_grace}{server_extra}
[[models]]
name = "reference-audioqa"
family = "aqbench-reference"
checkpoint = "aqbench/reference-cascade"
{server_args}
[models.correctness]
min_pass_rate = 0.0
{deterministic}
[dataset]
path = "{dataset}"

[workload]
warmup_requests = 2
requests = {requests}
concurrency = {concurrency}
request_timeout_s = 60.0
arms = {arms}
deadline_s = {deadline_s}
{extra}"""


def write_config(path: Path, *, out: Path, name: str, argv: list[str] | None = None,
                 server_args: list[str] | None = None, stop_grace: bool = True, server_extra: str = "",
                 deterministic: bool = False, requests: int = 40, concurrency: int = 2,
                 arms: tuple[str, ...] = ("audio", "transcript"), deadline_s: float = 300.0, extra: str = "") -> Path:
    """Write a bench.toml for the reference server to `path` (runs go under `out`); `argv` replaces the
    server's command (with REFERENCE_ARGV and fault flags), `server_args` adds the model's own flags,
    `server_extra` and `extra` are more TOML after [server] and at the end."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_CONFIG.format(
        out=out, name=name, argv=f"argv = {json.dumps(argv)}\n" if argv is not None else "",
        stop_grace="stop_grace_s = 10.0\n" if stop_grace else "", server_extra=server_extra,
        server_args=f"server_args = {json.dumps(server_args)}\n" if server_args is not None else "",
        deterministic="deterministic = true\n" if deterministic else "", dataset=DATASET, requests=requests,
        concurrency=concurrency, arms=json.dumps(list(arms)), deadline_s=deadline_s, extra=extra))
    return path


def aqbench_argv(*args: str) -> list[str]:
    """`aqbench` (through this interpreter) with warnings-only logs."""
    return [sys.executable, "-m", "orchestrator", "--log-level", "warning", *args]


def aqbench(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run `aqbench ARGS` from the repository root to its end; output captured."""
    return subprocess.run(aqbench_argv(*args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def only_run(runs: Path) -> Path:
    """The one run folder under `runs`."""
    [run_dir] = list(runs.iterdir())
    return run_dir


class CleanRun(NamedTuple):
    """A finished `aqbench run-aiperf` run: its exit code, its folder and what it wrote on stderr."""

    returncode: int
    dir: Path
    stderr: str


def clean_runs_at_once(root: Path) -> tuple[CleanRun, CleanRun]:
    """Two run-aiperf runs (40 requests, both arms) of the same clean, deterministic reference server, under
    `root`/a and `root`/b. They run at the same time so that both meet the same load on the shared machine
    (sequential runs on a busy box differ by whatever else ran in between, which no statistic can take for the
    server's doing). Each test reading one checks its exit code (one run's failure is not the other's)."""
    procs = []
    for side in ("a", "b"):
        config = write_config(root / side / "bench.toml", out=root / side / "runs", name="aa", deterministic=True,
                              deadline_s=400.0)
        procs.append(subprocess.Popen(aqbench_argv("run-aiperf", "--config", str(config)), cwd=ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=540) for p in procs]
    return (CleanRun(procs[0].returncode, only_run(root / "a" / "runs"), outputs[0][1]),
            CleanRun(procs[1].returncode, only_run(root / "b" / "runs"), outputs[1][1]))
