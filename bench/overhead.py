"""What watching costs: `aqbench run-aiperf` against the same server and AIPerf run without aqbench, side by side.

Alternates N pairs (the order swapped each pair): (a) the server started as aqbench starts it, awaited ready, then
bare `aiperf profile` with the exact argv and environment `build_command` gives aqbench (the same timing plugin,
`[workload] timing`; without the live tap, which is part of the observer), then the server stopped; (b) `aqbench
run-aiperf` on the same config. The measure is the CPU-seconds of each side's whole process tree per request
(server, AIPerf, and aqbench in (b)): this bench is the children's subreaper and reaps every process of a side, so
`getrusage(RUSAGE_CHILDREN)` counts the whole tree. Also: wall, AIPerf's launch-to-exit, aqbench's own process
(read from /proc/<pid>/stat of the exited, not yet reaped aqbench), and the host's load over each side (busy cores
from /proc/stat, less the side's own).

Run: .venv/bin/python bench/overhead.py [--pairs 4] [--config bench.toml] [--signal] [--requests N] [--cpus 0,1]
[--baseline DIR [--own-only]]
`--signal`: the reference server without speech models, on audioqa-v2's signal items (a host without Whisper).
Before the pairs, the bench loads the dataset and prepares its arms once with the config's clip cache, as any
earlier run would have: each (b) then finds its clips' facts in the cache's `facts/` (`--cold`: not warmed, so
the first (b) decodes every clip).
"""

from __future__ import annotations

import argparse
import compileall
import ctypes
import json
import os
import resource
import select
import shutil
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
from orchestrator.dataset import (
    Dataset,
    interleave_kinds,
    load_dataset,
    prepare_arms,
    resolve_dataset_path,
    write_aiperf_input,
)
from orchestrator.dataset.clip_cache import clip_cache_dir, facts_dir
from orchestrator.spine.journal import journal_path, read_lines
from orchestrator.supervision.server_spec import ServerSpec

ROOT = Path(__file__).resolve().parents[1]
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
_PR_SET_CHILD_SUBREAPER = 36
_SIGNAL_KINDS = {"count", "pitch", "frequency", "duration", "direction", "loudness", "silence", "channel"}


class _Mark(msgspec.Struct):
    """The journal fields this bench reads (a view of three event kinds)."""

    kind: str
    mono_ns: int = 0


class _Host:
    """The host's busy cores over a span, from /proc/stat (all processes: user, nice, system, irq, softirq)."""

    def __init__(self) -> None:
        self.t0, self.busy0 = time.monotonic(), self._busy_s()
        self.load = os.getloadavg()[0]

    @staticmethod
    def _busy_s() -> float:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
        return (user + nice + system + irq + softirq + steal) * _TICK_S

    def busy_cores(self) -> float:
        return (self._busy_s() - self.busy0) / (time.monotonic() - self.t0)


def _tree_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _reap_all(timeout_s: float = 60.0) -> None:
    """Wait for every descendant left to this subreaper (a side's orphans), so their CPU is counted."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.05)
    raise RuntimeError(f"descendants of this bench still running {timeout_s:g} s after their side ended")


def signal_config(cfg_path: Path, work: Path) -> Path:
    """`cfg_path` with the reference server's speech models off and audioqa-v2's signal items as the dataset."""
    src = ROOT / "datasets" / "audioqa-v2"
    data = work / "audioqa-v2-signal"
    (data / "audio").mkdir(parents=True, exist_ok=True)
    rows = [line for line in (src / "manifest.jsonl").open() if json.loads(line)["kind"] in _SIGNAL_KINDS]
    for line in rows:
        shutil.copyfile(src / json.loads(line)["audio"], data / json.loads(line)["audio"])
    (data / "manifest.jsonl").write_text("".join(rows))
    text = cfg_path.read_text()
    server_argv_end = '"--replicas", "{replicas}"]\nhost'
    dataset_name = 'name = "audioqa-v2"'
    if server_argv_end not in text or dataset_name not in text:
        raise SystemExit(f"--signal expects bench.toml's [server] argv and [dataset] name lines in {cfg_path}")
    text = text.replace(server_argv_end, '"--replicas", "{replicas}", "--no-speech-models"]\nhost', 1)
    text = text.replace(dataset_name, f'path = "{data}"  #', 1)
    text = text.replace('output_dir = "runs"', f'output_dir = "{work / "runs"}"', 1)
    out = work / "overhead.toml"
    out.write_text(text)
    return out


def _bare(cfg_path: Path, work: Path, requests: int | None) -> dict[str, float]:
    """(a): server start to ready, bare AIPerf, server stop."""
    cfg = load_config(cfg_path)
    workload = msgspec.structs.replace(cfg.workload, requests=requests) if requests else cfg.workload
    model = cfg.models[0]
    spec = ServerSpec.from_config(cfg, model, work, parts=server_parts(cfg.server.kind))
    dataset = load_dataset(resolve_dataset_path(cfg.dataset))
    # The rows run-aiperf sends, in its order (dealt by kind): the same requests on both sides.
    rows = interleave_kinds(prepare_arms(dataset, list(workload.arms), work / "wire"), dataset)
    input_file = write_aiperf_input(rows, work / "inputs.jsonl")
    tokenizer = ensure_tokenizer(model.tokenizer)
    cmd = build_command(workload, base_url=spec.base_url, model=model.name, input_file=input_file,
                        artifact_dir=work / "artifacts", tokenizer=tokenizer, live_tap=False)
    for folder in (cmd.env["TMPDIR"], cmd.artifact_dir):
        Path(folder).mkdir(parents=True, exist_ok=True)
    argv = spec.argv(1)
    records = spec.records_path(1)
    if records is not None:
        records.parent.mkdir(parents=True, exist_ok=True)
    host, cpu0, t0 = _Host(), _tree_cpu_s(), time.monotonic()
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
    _reap_all()
    end = time.monotonic()
    tree = _tree_cpu_s() - cpu0
    return {"wall": end - t0, "aiperf": t_exit - t_launch, "ready": ready - t0, "tree": tree,
            "requests": workload.requests + workload.warmup_requests, "busy": host.busy_cores(), "load": host.load}


def _warm(cfg_path: Path, work: Path) -> Dataset:
    """What an earlier run leaves in the clip cache: the dataset's clip facts and the WAVs made from its clips."""
    cfg = load_config(cfg_path)
    dataset = load_dataset(resolve_dataset_path(cfg.dataset), facts=facts_dir(cfg.run))
    prepare_arms(dataset, list(cfg.workload.arms), work / "wire", cache=clip_cache_dir(cfg.run))
    return dataset


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


def _aiperf_exit(parent: subprocess.Popen[bytes], started: float, timeout_s: float) -> float:
    """Find the AIPerf child of aqbench; return its monotonic exit time, seen through a pidfd."""
    deadline = started + timeout_s
    seen: set[int] = set()
    own = psutil.Process(parent.pid).cmdline()
    while time.monotonic() < deadline:
        if os.waitid(os.P_PID, parent.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
            raise RuntimeError("aqbench run-aiperf ended before its AIPerf child was seen")
        for pid in _children(parent.pid):
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


def _observed(cfg_path: Path, requests: int | None, root: Path = ROOT) -> dict[str, float]:
    """(b): `aqbench run-aiperf` from the checkout at `root`."""
    cfg = load_config(cfg_path)
    runs = Path(cfg.run.output_dir)
    before = set(runs.glob("*")) if runs.is_dir() else set()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    extra = ["--requests", str(requests)] if requests else []
    host, cpu0, t0_ns = _Host(), _tree_cpu_s(), time.monotonic_ns()
    log = Path(tempfile.gettempdir()) / f"aqb-overhead-{os.getpid()}.log"
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "orchestrator", "run-aiperf", "--config", str(cfg_path), *extra],
                                env=env, cwd=str(root), stdout=subprocess.DEVNULL, stderr=err)
    try:
        aiperf_exit = _aiperf_exit(proc, time.monotonic(), cfg.workload.deadline_s)
    finally:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        own = _self_cpu_s(proc.pid)
        _, status, _usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"aqbench run-aiperf exited {os.waitstatus_to_exitcode(status)}; its stderr ends:\n{tail}")
    _reap_all()
    end = time.monotonic_ns()
    tree = _tree_cpu_s() - cpu0
    (run_dir,) = set(runs.glob("*")) - before
    marks: dict[str, int] = {}
    dec = msgspec.json.Decoder(_Mark)
    for _, _, mark in read_lines(journal_path(run_dir), dec.decode):
        if mark.kind in ("server_spawned", "server_ready", "aiperf_started") and mark.kind not in marks:
            marks[mark.kind] = mark.mono_ns
    count = (requests or cfg.workload.requests) + cfg.workload.warmup_requests
    return {"wall": (end - t0_ns) / 1e9, "aiperf": aiperf_exit - marks["aiperf_started"] / 1e9,
            "spawn": (marks["server_spawned"] - t0_ns) / 1e9, "ready": (marks["server_ready"] - t0_ns) / 1e9,
            "launch": (marks["aiperf_started"] - t0_ns) / 1e9, "own": own, "tree": tree, "requests": count,
            "busy": host.busy_cores(), "load": host.load}


def _line(i: int, side: str, r: dict[str, float]) -> str:
    outside = max(0.0, r["busy"] - r["tree"] / r["wall"])
    own = f"  aqbench own {r['own']:5.2f} CPU-s" if "own" in r else ""
    return (f"pair {i + 1} {side:8s} wall {r['wall']:6.2f} s  tree {r['tree']:6.2f} CPU-s "
            f"({1000 * r['tree'] / r['requests']:6.1f} ms/request){own}  AIPerf {r['aiperf']:6.2f} s   "
            f"host: load {r['load']:.2f}, busy {r['busy']:.2f} cores, outside this side {outside:.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=4)
    p.add_argument("--config", default=str(ROOT / "bench.toml"))
    p.add_argument("--requests", type=int, default=0, help="profiling requests (default: the config's)")
    p.add_argument("--signal", action="store_true", help="speech models off, audioqa-v2's signal items")
    p.add_argument("--cpus", default="", help="pin the bench and every process it starts to these cores (0,1)")
    p.add_argument("--cold", action="store_true", help="do not warm the clip cache's facts before the pairs")
    p.add_argument("--baseline", default="", help="another aqbench checkout (e.g. `git archive` of main) run "
                   "as (c) after each pair, with the same config: before and after in one sitting")
    p.add_argument("--own-only", action="store_true", help="with --baseline: no bare side; (b) and the baseline "
                   "alternate, for aqbench's own process before and after (steadier than the tree's ratio)")
    args = p.parse_args()
    if args.own_only and not args.baseline:
        p.error("--own-only compares against --baseline DIR")
    if args.cpus:
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # Bytecode as an installed package has it, so that no side compiles sources on its first start.
    for root in filter(None, [ROOT, Path(args.baseline).resolve() if args.baseline else None]):
        for package in ("orchestrator", "adapters"):
            compileall.compile_dir(root / package, quiet=1)
    requests = args.requests or None
    sides: dict[str, list[dict[str, float]]] = {"bare": [], "aqbench": [], "baseline": []}
    with tempfile.TemporaryDirectory(prefix="aqb-overhead-") as keep:
        cfg_path = signal_config(Path(args.config).resolve(), Path(keep)) if args.signal else Path(args.config).resolve()
        if not args.cold:
            with tempfile.TemporaryDirectory(prefix="aqb-overhead-") as tmp:
                _warm(cfg_path, Path(tmp))
        print(f"config {cfg_path}; cores {sorted(os.sched_getaffinity(0))} of {os.cpu_count()}; "
              f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        for i in range(args.pairs):
            if args.own_only:
                for side in ["aqbench", "baseline"] if i % 2 == 0 else ["baseline", "aqbench"]:
                    root = ROOT if side == "aqbench" else Path(args.baseline).resolve()
                    sides[side].append(_observed(cfg_path, requests, root))
                    print(_line(i, side, sides[side][-1]), flush=True)
                continue
            order = ["bare", "aqbench"] if i % 2 == 0 else ["aqbench", "bare"]
            for side in order:
                with tempfile.TemporaryDirectory(prefix="aqb-overhead-") as tmp:
                    r = _bare(cfg_path, Path(tmp), requests) if side == "bare" else _observed(cfg_path, requests)
                sides[side].append(r)
                print(_line(i, side, r), flush=True)
            if args.baseline:
                sides["baseline"].append(_observed(cfg_path, requests, Path(args.baseline).resolve()))
                print(_line(i, "baseline", sides["baseline"][-1]), flush=True)
    _summary(sides, args.pairs)


def _summary(sides: dict[str, list[dict[str, float]]], pairs: int) -> None:
    def med(side: str, key: str) -> float:
        return statistics.median(r[key] for r in sides[side])

    if not sides["bare"]:  # --own-only
        after, before = ([r["own"] for r in sides[s]] for s in ("aqbench", "baseline"))
        print(f"\nover {pairs} pairs (load now {' '.join(f'{x:.2f}' for x in os.getloadavg())}): aqbench's own "
              f"process {', '.join(f'{x:.2f}' for x in after)} CPU-s (median {statistics.median(after):.2f}); the "
              f"baseline's {', '.join(f'{x:.2f}' for x in before)} (median {statistics.median(before):.2f}); "
              f"less by {statistics.median(b - a for a, b in zip(after, before, strict=True)):.2f} CPU-s "
              "(median of the pairs)")
        return

    bare, seen = sides["bare"], sides["aqbench"]
    print(f"\nover {pairs} pairs (load now {' '.join(f'{x:.2f}' for x in os.getloadavg())}):")
    for key, name in (("tree", "CPU-s of the whole tree per request"), ("wall", "wall")):
        ratios = [b[key] / a[key] for a, b in zip(bare, seen, strict=True)]
        print(f"  {name}: bare {med('bare', key):.2f}, aqbench {med('aqbench', key):.2f}; ratio per pair "
              + ", ".join(f"{x:.3f}" for x in ratios)
              + f"; median {statistics.median(ratios):.3f}, max {max(ratios):.3f} (goal <= 1.10)")
    print(f"  per request: bare {1000 * med('bare', 'tree') / bare[0]['requests']:.1f} ms, aqbench "
          f"{1000 * med('aqbench', 'tree') / seen[0]['requests']:.1f} ms of CPU ({seen[0]['requests']:.0f} requests "
          "with warmup)")
    print(f"  aqbench's own process: {med('aqbench', 'own'):.2f} CPU-s (median); the rest of its tree "
          f"{med('aqbench', 'tree') - med('aqbench', 'own'):.2f} against bare {med('bare', 'tree'):.2f}")
    print(f"  AIPerf launch -> exit: bare {med('bare', 'aiperf'):.2f} s, under aqbench {med('aqbench', 'aiperf'):.2f} s")
    print(f"  aqbench start-up: command -> server spawn {med('aqbench', 'spawn'):.3f} s, -> ready "
          f"{med('aqbench', 'ready'):.2f} s (bare {med('bare', 'ready'):.2f} s), -> AIPerf launch "
          f"{med('aqbench', 'launch'):.2f} s")
    if sides["baseline"]:
        ratios = [c["tree"] / a["tree"] for a, c in zip(bare, sides["baseline"], strict=True)]
        print("  baseline: tree ratio per pair " + ", ".join(f"{x:.3f}" for x in ratios)
              + f", median {statistics.median(ratios):.3f}; own {med('baseline', 'own'):.2f} CPU-s")


if __name__ == "__main__":
    main()
