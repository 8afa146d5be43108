"""`[workload]` -> the exact AIPerf argv and environment, saved as JSON and as a copy-paste shell line.

Pure: builds and writes the command, never runs it (run.py does).
"""

from __future__ import annotations

import hashlib
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from adapters.aiperf.handover_files import TIMING_WAIT_ENV
from adapters.aiperf.tokenizer import aiperf_tokenizer
from orchestrator.config import WorkloadConfig
from orchestrator.spine.ports import ExportLevel, HandoverControl

__all__ = ["AiperfCommand", "build_command", "FAST_START_ARGS", "LOW_LAG_ENV", "SHORT_TMP_PREFIX", "TIMING_WAIT_ENV",
           "WORKER_GC_ENV"]

SHORT_TMP_MAX = 48
SHORT_TMP_PREFIX = "aqbench-tmp-"


def _short_tmp(requested: Path) -> Path:
    """AIPerf puts its ZMQ IPC sockets under TMPDIR/tmpXXXXXXXX/aiperf/; a Unix socket path must stay
    under 108 bytes, so a deep run folder is replaced by a short, deterministic /tmp/aqbench-<hash>."""
    requested = requested.resolve()
    if len(str(requested)) <= SHORT_TMP_MAX:
        return requested
    digest = hashlib.sha256(str(requested).encode()).hexdigest()[:12]
    return Path("/tmp") / f"{SHORT_TMP_PREFIX}{digest}"


def _default_executable() -> str:
    # The console script beside this interpreter is the AIPerf that check_install fingerprinted.
    beside = Path(sys.executable).parent / "aiperf"
    return str(beside) if beside.is_file() else "aiperf"

# A record reaches profile_export.jsonl ~60 ms after its request ends (defaults: up to 1 s).
LOW_LAG_ENV = {"AIPERF_RECORD_EXPORT_BATCH_SIZE": "1", "AIPERF_METRICS_EXPORT_FLUSH_INTERVAL": "0.05"}
# Read by aqbench's worker entry (adapters/aiperf/worker.py, loaded by AIPerf; not imported here).
WORKER_GC_ENV = "AQBENCH_WORKER_GC"

# AIPerf's start-up without its synthetic prompt corpus (bench/aiperf_startup.py; what is sent is the same): built
# even for a file dataset, it tokenizes 5 MB of text, 5 million tokens with aqbench's character-level tokenizer (5-10 s
# on 2 cores). Every input row carries its own text, so the random corpus (no text to tokenize) is never used either.
# AIPerf's tokenizer prefetch is skipped too where the tokenizer is a hub cache entry (aqbench's own): see
# adapters/aiperf/tokenizer.py's aiperf_tokenizer, which gives its name and HF_HUB_CACHE / HF_HUB_OFFLINE.
FAST_START_ARGS = ("--prompt-corpus", "random")


class AiperfCommand(msgspec.Struct, frozen=True, kw_only=True):
    """argv (argv[0] is the aiperf executable), the extra environment, and both as one shell line
    (without TMPDIR, which points at a temporary folder of the run)."""

    argv: list[str]
    env: dict[str, str]
    shell: str
    artifact_dir: str
    input_file: str
    keep_inputs: bool = False  # keep AIPerf's inputs.json once it has ended ([workload] keep_inputs)

    def save(self, folder: Path) -> tuple[Path, Path]:
        """Write `aiperf_command.json` and `aiperf_command.sh` into `folder`. Blocks (two small writes)."""
        folder.mkdir(parents=True, exist_ok=True)
        as_json = folder / "aiperf_command.json"
        as_sh = folder / "aiperf_command.sh"
        as_json.write_bytes(msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n")
        as_sh.write_text("#!/bin/sh\n# Reproduces this AIPerf run (the tap env var is aqbench's own).\n"
                         + self.shell + "\n")
        return as_json, as_sh

    def extended(self, extra: Sequence[str]) -> AiperfCommand:
        """The same command with `extra` arguments appended (argv and shell line)."""
        return msgspec.structs.replace(self, argv=[*self.argv, *extra], shell=f"{self.shell} {' '.join(extra)}")


def build_command(
    workload: WorkloadConfig,
    *,
    base_url: str,
    model: str,
    input_file: Path,
    artifact_dir: Path,
    tokenizer: Path,
    executable: str = "",
    requests: int | None = None,
    warmup: int | None = None,
    concurrency: int | None = None,
    request_rate: float | None = None,
    tap_dir: Path | None = None,
    tmp_dir: Path | None = None,
    live_tap: bool = True,
    worker_gc: bool = False,
    timing_wait: bool = False,
    control: HandoverControl | None = None,
    export_level: ExportLevel = "raw",
) -> AiperfCommand:
    """Build the AIPerf command for one run. Overrides (requests, ...) win over `workload`.

    `concurrency` and `request_rate` are exclusive; passing one drops the workload's other mode.
    The live tap folder and TMPDIR default to `tap/` and `tmp/` beside `artifact_dir`.
    `worker_gc` (soaks) turns Python's cycle collector back on in AIPerf's worker, which AIPerf 0.13.0
    turns off: without it the worker keeps ~14 KiB per request (adapters/aiperf/worker.py).
    `timing_wait` (soaks, sweeps) makes AIPerf's timing manager wait for a freed slot in concurrency mode instead
    of spinning (adapters/aiperf/timing.py), whatever `workload.timing` says; without it the workload decides
    (`wait` by default). `control` adds a handover control's variables (its folder).
    `export_level` "raw" keeps every request and response body in profile_export_raw.jsonl (~180 KB per
    audio request: the evidence of a bounded run); "records" (soaks) keeps the per-request records
    only, so disk use stays a few KB per request however long the run.
    """
    artifact_dir = Path(artifact_dir).resolve()
    executable = executable or _default_executable()
    if live_tap and tap_dir is None:
        tap_dir = artifact_dir.parent / "tap"
    tmp_dir = _short_tmp(Path(tmp_dir) if tmp_dir is not None else artifact_dir.parent / "tmp")
    count = requests if requests is not None else workload.requests
    warm = warmup if warmup is not None else workload.warmup_requests
    if concurrency is not None and request_rate is not None:
        raise ValueError("build_command: pass concurrency or request_rate, not both")
    if concurrency is None and request_rate is None:
        concurrency, request_rate = workload.concurrency, workload.request_rate
    tokenizer_arg, tokenizer_env = aiperf_tokenizer(tokenizer)
    argv = [
        executable, "profile",
        "--model", model,
        "--url", base_url,
        "--endpoint-type", "chat",
        "--tokenizer", tokenizer_arg,
        "--input-file", str(Path(input_file).resolve()),
        "--custom-dataset-type", "single_turn",
        "--dataset-sampling-strategy", "sequential",
        "--request-count", str(count),
        "--extra-inputs", "temperature:0",
        "--request-timeout-seconds", f"{workload.request_timeout_s:g}",
        "--random-seed", "0",
        "--export-level", export_level,
        "--export-http-trace",
        "--export-outputs-json",
        "--ui-type", "none",
        "--no-server-metrics",
        "--no-gpu-telemetry",
        *FAST_START_ARGS,
        "--artifact-dir", str(Path(artifact_dir).resolve()),
    ]
    if warm:
        argv += ["--warmup-request-count", str(warm)]
    if request_rate is not None:
        argv += ["--request-rate", f"{request_rate:g}", "--arrival-pattern", workload.arrival_pattern]
    else:
        argv += ["--concurrency", str(concurrency)]
    if workload.streaming:
        argv.append("--streaming")
    if workload.max_tokens is not None:
        argv += ["--extra-inputs", f"max_tokens:{workload.max_tokens}"]
    env = dict(LOW_LAG_ENV) | tokenizer_env
    if live_tap and tap_dir is not None:
        env["AQBENCH_TAP_DIR"] = str(Path(tap_dir).resolve())
    if worker_gc:
        env[WORKER_GC_ENV] = "1"
    if timing_wait or workload.timing == "wait":
        env[TIMING_WAIT_ENV] = "1"
    if control is not None:
        env.update(control.env())
    if tmp_dir is not None:
        env["TMPDIR"] = str(Path(tmp_dir).resolve())
    # TMPDIR is a short folder of this run's own (often removed when AIPerf ends): a copied command line
    # needs none, so the reproduce line leaves it out.
    shown = {k: v for k, v in env.items() if k != "TMPDIR"}
    shell = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in shown.items()), *map(shlex.quote, argv)])
    return AiperfCommand(argv=argv, env=env, shell=shell, artifact_dir=str(Path(artifact_dir).resolve()),
                         input_file=str(Path(input_file).resolve()), keep_inputs=workload.keep_inputs)
