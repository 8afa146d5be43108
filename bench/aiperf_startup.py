"""AIPerf's start-up with and without aqbench's fast-start settings, side by side in one run.

Usage: flock /tmp/aqbench-heavy.lock .venv/bin/python bench/aiperf_startup.py [--pairs 3] [--requests 8]
       [--compare corpus|prefetch]

Starts the reference server of bench.toml once, then runs `aiperf profile` with the exact argv and environment
`build_command` gives aqbench (concurrency 1, a few requests), alternating (order swapped every pair):
- before: with `--compare corpus` (the default), without `FAST_START_ARGS` (AIPerf tokenizes its synthetic prompt
  corpus); with `--compare prefetch`, the tokenizer given as its folder and without the hub cache environment
  (AIPerf prefetches it: adapters/aiperf/tokenizer.py's aiperf_tokenizer);
- after: as aqbench runs it now.
For each run it prints the start-up (spawn to AIPerf's "Phase warmup ... started" line: its first request) and
spawn to exit, then the medians and their ratio. It also checks that both send the same requests: the payloads
of AIPerf's `inputs.json` must be equal.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
from server_ready import wait_ready  # bench/ is on sys.path as the script's folder

from adapters.aiperf import build_command, ensure_tokenizer
from adapters.aiperf.command import FAST_START_ARGS, AiperfCommand
from adapters.server_kinds import server_parts
from orchestrator.config import WorkloadConfig, load_config
from orchestrator.dataset import load_dataset, prepare_arms, resolve_dataset_path, write_aiperf_input
from orchestrator.supervision.server_spec import ServerSpec

ROOT = Path(__file__).resolve().parents[1]
_FIRST = "Phase warmup (warmup) started"


def _without_fast_start(cmd: AiperfCommand) -> AiperfCommand:
    """The command as aqbench built it before the fast-start settings."""
    argv = list(cmd.argv)
    at = argv.index(FAST_START_ARGS[0])
    del argv[at:at + len(FAST_START_ARGS)]
    return msgspec.structs.replace(cmd, argv=argv)


def _with_prefetch(cmd: AiperfCommand, folder: Path) -> AiperfCommand:
    """The command as aqbench built it before its tokenizer was a hub cache entry: the folder's path, no HF env."""
    argv = list(cmd.argv)
    argv[argv.index("--tokenizer") + 1] = str(folder)
    env = {k: v for k, v in cmd.env.items() if k not in ("HF_HUB_CACHE", "HF_HUB_OFFLINE")}
    return msgspec.structs.replace(cmd, argv=argv, env=env)


def _run(cmd: AiperfCommand) -> dict[str, float]:
    """One AIPerf run: seconds from spawn to its first request's phase line, and to its exit."""
    for folder in (cmd.env["TMPDIR"], cmd.artifact_dir):
        Path(folder).mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k != "AQBENCH_TAP_DIR"}
    t0 = time.monotonic()
    first = float("nan")
    proc = subprocess.Popen(cmd.argv, env={**base, **cmd.env}, cwd=cmd.artifact_dir, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if _FIRST in line and first != first:
            first = time.monotonic() - t0
    rc = proc.wait()
    if rc != 0:
        raise RuntimeError(f"AIPerf exited {rc}; see {cmd.artifact_dir}")
    return {"startup": first, "total": time.monotonic() - t0}


def _payloads(artifact_dir: str) -> list[object]:
    data = json.loads((Path(artifact_dir) / "inputs.json").read_text())
    return [(session["session_id"], session["payloads"]) for session in data["data"]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--config", type=Path, default=ROOT / "bench.toml")
    ap.add_argument("--compare", choices=("corpus", "prefetch"), default="corpus",
                    help="what 'before' lacks: the fast-start args (corpus) or the hub cache tokenizer (prefetch)")
    args = ap.parse_args()
    cfg = load_config(args.config)
    model = cfg.models[0]
    results: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="aqbench-startup-") as d:
        work = Path(d)
        spec = ServerSpec.from_config(cfg, model, work, parts=server_parts(cfg.server.kind))
        rows = prepare_arms(load_dataset(resolve_dataset_path(cfg.dataset)), list(cfg.workload.arms), work / "wire")
        input_file = write_aiperf_input(rows, work / "inputs.jsonl")
        tokenizer = ensure_tokenizer(model.tokenizer)
        records = spec.records_path(1)
        if records is not None:
            records.parent.mkdir(parents=True, exist_ok=True)
        server = subprocess.Popen(spec.argv(1), env={**os.environ, **spec.env}, cwd=spec.cwd or None,
                                  start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dirs: dict[str, str] = {}
        try:
            wait_ready(spec.base_url, cfg.server.startup_timeout_s)
            workload = WorkloadConfig(warmup_requests=2, requests=args.requests, concurrency=1)
            for i in range(args.pairs):
                order = ("before", "after") if i % 2 == 0 else ("after", "before")
                for kind in order:
                    cmd = build_command(workload, base_url=spec.base_url, model=model.name, input_file=input_file,
                                        artifact_dir=work / f"{kind}-{i}" / "artifacts", tokenizer=tokenizer,
                                        live_tap=False)
                    if kind == "before":
                        cmd = _without_fast_start(cmd) if args.compare == "corpus" else _with_prefetch(cmd, tokenizer)
                    got = _run(cmd)
                    dirs[kind] = cmd.artifact_dir
                    results[kind].append(got)
                    print(f"pair {i + 1} {kind:<6} start-up {got['startup']:5.1f} s  spawn to exit {got['total']:5.1f} s "
                          f"(load average {os.getloadavg()[0]:.2f})", flush=True)
            same = _payloads(dirs["before"]) == _payloads(dirs["after"])
        finally:
            os.killpg(server.pid, signal.Signals[cfg.server.stop_signal])
            server.wait(cfg.server.stop_grace_s)
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("startup", "total")} for k, v in results.items()}
    print(f"compared: {args.compare}; load average before {load0[0]:.2f}, after {os.getloadavg()[0]:.2f} (2 cores shared with other sessions)")
    for k in ("before", "after"):
        print(f"median {k:<6} start-up {med[k]['startup']:5.1f} s  spawn to exit {med[k]['total']:5.1f} s")
    print(f"after / before: start-up {med['after']['startup'] / med['before']['startup']:.2f}x, spawn to exit "
          f"{med['after']['total'] / med['before']['total']:.2f}x; same request payloads: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
