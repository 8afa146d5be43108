"""What watching costs: `aqbench run-aiperf` against the same AIPerf run without aqbench, side by side.

Alternates N times: (a) the reference server started as aqbench starts it, awaited ready, then bare
`aiperf profile` with the exact argv and environment `build_command` gives aqbench (without the live tap,
which is part of the observer), then the server stopped; (b) `aqbench run-aiperf` on the same config.
Prints the median wall of each, their ratio, AIPerf's launch-to-exit time inside and outside aqbench,
start-up latencies, and the CPU-seconds of aqbench's own process (not its children): read from
/proc/<pid>/stat of the exited, not yet reaped aqbench (waitid WNOWAIT), in clock ticks.

Run: .venv/bin/python bench/overhead.py [--pairs 3] [--config bench.toml]
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
import psutil
from server_ready import wait_ready  # bench/ is on sys.path as the script's folder

from adapters.aiperf import build_command, ensure_tokenizer
from adapters.server_kinds import server_parts
from orchestrator.config import load_config
from orchestrator.dataset import load_dataset, prepare_arms, resolve_dataset_path, write_aiperf_input
from orchestrator.supervision.server_spec import ServerSpec

ROOT = Path(__file__).resolve().parents[1]
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


class _Mark(msgspec.Struct):
    """The journal fields this bench reads (a view of two event kinds)."""

    kind: str
    mono_ns: int = 0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _bare(cfg_path: Path, work: Path) -> dict[str, float]:
    """(a): server start to ready, bare AIPerf, server stop. Returns wall and AIPerf launch-to-exit."""
    cfg = load_config(cfg_path)
    model = cfg.models[0]
    spec = ServerSpec.from_config(cfg, model, work, parts=server_parts(cfg.server.kind))
    rows = prepare_arms(load_dataset(resolve_dataset_path(cfg.dataset)), list(cfg.workload.arms), work / "wire")
    input_file = write_aiperf_input(rows, work / "inputs.jsonl")
    tokenizer = ensure_tokenizer(model.tokenizer)
    cmd = build_command(cfg.workload, base_url=spec.base_url, model=model.name, input_file=input_file,
                        artifact_dir=work / "artifacts", tokenizer=tokenizer, live_tap=False)
    for folder in (cmd.env["TMPDIR"], cmd.artifact_dir):
        Path(folder).mkdir(parents=True, exist_ok=True)
    argv = spec.argv(1)
    records = spec.records_path(1)
    if records is not None:
        records.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    server = subprocess.Popen(argv, env={**os.environ, **spec.env}, cwd=spec.cwd or None, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(spec.base_url, cfg.server.startup_timeout_s)
        ready = time.monotonic()
        env = {k: v for k, v in os.environ.items() if k != "AQBENCH_TAP_DIR"}
        t_launch = time.monotonic()
        rc = subprocess.call(cmd.argv, env={**env, **cmd.env}, cwd=cmd.artifact_dir, start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t_exit = time.monotonic()
        if rc != 0:
            raise RuntimeError(f"bare AIPerf exited {rc}; see {cmd.artifact_dir}")
    finally:
        os.killpg(server.pid, signal.Signals[cfg.server.stop_signal])
        server.wait(cfg.server.stop_grace_s)
    end = time.monotonic()
    return {"wall": end - t0, "aiperf": t_exit - t_launch, "ready": ready - t0}


def _self_cpu_s(pid: int) -> float:
    """utime + stime of `pid` itself (children excluded), from its stat while it is a zombie."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * _TICK_S  # fields 14 and 15 of proc(5), counted from 1


def _children(pid: int) -> list[int]:
    """Direct children of `pid` from its threads' /proc children lists: a few small reads, where psutil
    would read the stat of every process on the (shared) host at each poll."""
    out: list[int] = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out += map(int, Path(f"/proc/{pid}/task/{tid}/children").read_bytes().split())
        except FileNotFoundError:
            continue  # the thread ended
    return out


def _aiperf_exit(parent: int, started: float, timeout_s: float) -> float:
    """Find the AIPerf child of aqbench; return its monotonic exit time, seen through a pidfd."""
    deadline = started + timeout_s
    seen: set[int] = set()
    own = psutil.Process(parent).cmdline()
    while time.monotonic() < deadline:
        for pid in _children(parent):
            if pid in seen:
                continue
            try:
                cmdline = psutil.Process(pid).cmdline()
                fd = os.pidfd_open(pid)
            except (psutil.Error, ProcessLookupError):
                continue
            if cmdline != own:  # forked but not yet exec'd: look again at the next poll
                seen.add(pid)
            try:
                if "profile" in cmdline[:3] and any(Path(arg).name == "aiperf" for arg in cmdline[:2]):
                    select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
                    return time.monotonic()
            finally:
                os.close(fd)
        time.sleep(0.02)
    raise RuntimeError("no AIPerf child of aqbench seen")


def _observed(cfg_path: Path, root: Path = ROOT) -> dict[str, float]:
    """(b): `aqbench run-aiperf` from the checkout at `root`. Returns wall, AIPerf launch-to-exit,
    start-up times, own CPU."""
    cfg = load_config(cfg_path)
    runs = Path(cfg.run.output_dir)
    before = set(runs.glob("*")) if runs.is_dir() else set()
    env = {**os.environ, "PYTHONPATH": str(root)}
    t0_ns = time.monotonic_ns()
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator", "run-aiperf", "--config", str(cfg_path)],
                            env=env, cwd=str(root), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    aiperf_exit = _aiperf_exit(proc.pid, time.monotonic(), cfg.workload.deadline_s)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    end = time.monotonic_ns()
    own = _self_cpu_s(proc.pid)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"aqbench run-aiperf exited {os.waitstatus_to_exitcode(status)}")
    (run_dir,) = set(runs.glob("*")) - before
    marks: dict[str, int] = {}
    dec = msgspec.json.Decoder(_Mark)
    with open(run_dir / "events.jsonl", "rb") as fh:
        for line in fh:
            mark = dec.decode(line)
            if mark.kind in ("server_spawned", "server_ready", "aiperf_started") and mark.kind not in marks:
                marks[mark.kind] = mark.mono_ns
    return {"wall": (end - t0_ns) / 1e9, "aiperf": aiperf_exit - marks["aiperf_started"] / 1e9,
            "spawn": (marks["server_spawned"] - t0_ns) / 1e9, "ready": (marks["server_ready"] - t0_ns) / 1e9,
            "launch": (marks["aiperf_started"] - t0_ns) / 1e9, "cpu_self": own,
            "cpu_total": usage.ru_utime + usage.ru_stime}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--config", default=str(ROOT / "bench.toml"))
    p.add_argument("--baseline", default="", help="another aqbench checkout (e.g. `git archive` of main) run "
                   "as (c) after each pair, with its own bench.toml: before and after in one sitting")
    args = p.parse_args()
    cfg_path = Path(args.config).resolve()
    bare: list[dict[str, float]] = []
    seen: list[dict[str, float]] = []
    base: list[dict[str, float]] = []
    for i in range(args.pairs):
        with tempfile.TemporaryDirectory(prefix="aqb-overhead-") as tmp:
            load = _load()
            bare.append(_bare(cfg_path, Path(tmp)))
            print(f"pair {i + 1} (a) bare      wall {bare[-1]['wall']:6.2f} s  aiperf {bare[-1]['aiperf']:6.2f} s"
                  f"  ready {bare[-1]['ready']:5.2f} s   load {load}", flush=True)
        load = _load()
        seen.append(_observed(cfg_path))
        s = seen[-1]
        print(f"pair {i + 1} (b) aqbench   wall {s['wall']:6.2f} s  aiperf {s['aiperf']:6.2f} s"
              f"  spawn {s['spawn']:5.2f} s  ready {s['ready']:5.2f} s  launch {s['launch']:5.2f} s"
              f"  own cpu {s['cpu_self']:5.2f} s ({100 * s['cpu_self'] / s['wall']:.1f} % of a core)"
              f"   load {load}", flush=True)
        if args.baseline:
            load = _load()
            root = Path(args.baseline).resolve()
            base.append(_observed(root / "bench.toml", root))
            s = base[-1]
            print(f"pair {i + 1} (c) baseline  wall {s['wall']:6.2f} s  aiperf {s['aiperf']:6.2f} s"
                  f"  spawn {s['spawn']:5.2f} s  launch {s['launch']:5.2f} s  own cpu {s['cpu_self']:5.2f} s"
                  f"   load {load}", flush=True)

    def med(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    ratio = med(seen, "wall") / med(bare, "wall")
    print(f"\nmedians over {args.pairs} pairs (load now {_load()}):")
    print(f"  wall: bare {med(bare, 'wall'):.2f} s, aqbench {med(seen, 'wall'):.2f} s, ratio {ratio:.3f} "
          f"(goal <= 1.10); pair ratios "
          + ", ".join(f"{b['wall'] / a['wall']:.3f}" for a, b in zip(bare, seen, strict=True)))
    print(f"  AIPerf launch -> exit: bare {med(bare, 'aiperf'):.2f} s, under aqbench {med(seen, 'aiperf'):.2f} s,"
          f" ratio {med(seen, 'aiperf') / med(bare, 'aiperf'):.3f}")
    print(f"  aqbench start-up: command -> server spawn {med(seen, 'spawn'):.3f} s, -> ready {med(seen, 'ready'):.2f} s"
          f" (bare {med(bare, 'ready'):.2f} s from spawn), -> AIPerf launch {med(seen, 'launch'):.2f} s")
    cpu = med(seen, "cpu_self")
    print(f"  aqbench's own process: {cpu:.2f} CPU-s over {med(seen, 'wall'):.1f} s = "
          f"{100 * cpu / med(seen, 'wall'):.1f} % of one core (goal < 5 %); with children {med(seen, 'cpu_total'):.1f} CPU-s")
    if base:
        print(f"  baseline {args.baseline}: wall {med(base, 'wall'):.2f} s (ratio to bare "
              f"{med(base, 'wall') / med(bare, 'wall'):.3f}), AIPerf {med(base, 'aiperf'):.2f} s, spawn "
              f"{med(base, 'spawn'):.3f} s, launch {med(base, 'launch'):.2f} s, own cpu {med(base, 'cpu_self'):.2f} s")


if __name__ == "__main__":
    main()
