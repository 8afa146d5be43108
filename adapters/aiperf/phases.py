"""Several load windows in one AIPerf process: AIPerf 0.13.0's `--config` file with a `phases:` list.
Pure: builds the command and writes the phases file (JSON, which YAML reads as is), never runs it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from adapters.aiperf.command import AiperfCommand
from orchestrator.spine.ports import PhaseLoad

__all__ = ["LOAD_FLAGS", "PHASES_FILE", "phased_command", "phase_document"]

PHASES_FILE = "phases.yaml"
# The flags of one load that the phases replace (with their value); under --config, a flag wins over the file.
LOAD_FLAGS = ("--request-count", "--warmup-request-count", "--request-rate", "--arrival-pattern", "--concurrency")


def _flag(argv: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _phase(load: PhaseLoad, name: str, kind: str, requests: int, arrival: str) -> dict[str, object]:
    out: dict[str, object] = {"name": name, "kind": kind, "requests": requests}
    if load.rate is not None:
        out.update(type=arrival, rate=load.rate)
    else:
        out.update(type="concurrency", concurrency=load.concurrency)
    return out


def phase_document(argv: Sequence[str], loads: Sequence[PhaseLoad]) -> dict[str, object]:
    """AIPerf's config document for `loads`, in order: for each, a warmup phase (`warmup_<name>`, left out of
    AIPerf's results) when it has warmup requests, then its profiling phase (`<name>`). The dataset repeats
    the command's own input file, format and sampling (AIPerf's `--config` path requires one)."""
    arrival = _flag(argv, "--arrival-pattern") or "constant"
    phases: list[dict[str, object]] = []
    for load in loads:
        if (load.rate is None) == (load.concurrency is None):
            raise ValueError(f"phase {load.name!r}: give a rate or a concurrency, not both or neither")
        if load.warmup:
            phases.append(_phase(load, f"warmup_{load.name}", "warmup", load.warmup, arrival))
        phases.append(_phase(load, load.name, "profiling", load.requests, arrival))
    dataset = {"type": "file", "path": _flag(argv, "--input-file"),
               "format": _flag(argv, "--custom-dataset-type") or "single_turn",
               "sampling": _flag(argv, "--dataset-sampling-strategy") or "sequential"}
    return {"schemaVersion": "2.0", "benchmark": {"dataset": dataset, "phases": phases}}


# Why: every AIPerf process pays 10-13 s of start-up on 2 cores (docs/sweep.md), most of a short sweep point. One
# process running `warmup_r2, r2, warmup_r4, r4, ...` pays it once. AIPerf runs the phases in order, the next one
# starting once the previous one's requests have all returned (not `seamless`), and every record carries its
# `phase_name`, so each phase's records go to their own window (records.py, run.py).
def phased_command(cmd: AiperfCommand, loads: Sequence[PhaseLoad], folder: Path,
                   env: Mapping[str, str] | None = None) -> AiperfCommand:
    """`cmd` (one run's command, from build_command) rewritten to run `loads` as phases of one process: its load
    flags dropped, `--config <folder>/phases.yaml` added, `env` (a gates control's) added to its environment.
    Everything else (endpoint, dataset, exports, tap, environment) is the command's own. Writes the phases file
    (blocks: one small write)."""
    if not loads:
        raise ValueError("phased_command: no loads")
    names = [load.name for load in loads]
    if len(set(names)) != len(names):
        raise ValueError(f"phased_command: phase names repeat: {names}")
    argv: list[str] = []
    skip = False
    for arg in cmd.argv:
        if skip:
            skip = False
            continue
        if arg in LOAD_FLAGS:
            skip = True
            continue
        argv.append(arg)
    folder.mkdir(parents=True, exist_ok=True)
    path = (folder / PHASES_FILE).resolve()
    path.write_bytes(msgspec.json.format(msgspec.json.encode(phase_document(cmd.argv, loads)), indent=2) + b"\n")
    argv += ["--config", str(path)]
    full = {**cmd.env, **(env or {})}
    shown = {k: v for k, v in full.items() if k != "TMPDIR"}
    shell = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in shown.items()), *map(shlex.quote, argv)])
    return msgspec.structs.replace(cmd, argv=argv, env=full, shell=shell)
