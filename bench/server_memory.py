"""Memory of the reference server under the soak workload: RSS per minute, per heap variant, then the trend.

Usage:
  python bench/server_memory.py run --out DIR [--duration-s 7200] [--variants default,nowarm,arena2,trim,...]
  python bench/server_memory.py analyse DIR [DIR ...] [--warmup-min 10]

`run` starts one reference server per variant (`python -m adapters.reference ... --replicas 2`), drives each
with closed-loop clients (--concurrency, default 1) sending the dataset's audio-arm chat bodies in rotation (the
body shape of adapters/chat/http.py, non-streaming), and appends one JSON line per variant every
--sample-every-s (10 s) to DIR/samples.jsonl: the RSS of the server's process tree (psutil, summed), its
threads and the requests answered. Variants: default (the server's defaults, warm-up pass included); nowarm
(--no-warm-up); arena2 (MALLOC_ARENA_MAX=2); trim (--malloc-trim-every); tracemalloc (--tracemalloc-snapshots
DIR/tracemalloc/tracemalloc; the tracing itself costs RSS); engine (the Engine class in a child process, no HTTP).
`analyse` judges each variant's per-minute median RSS after the warm-up with orchestrator.judge.trend
(Theil-Sen, 95 % interval), the last 30 minutes alone (levelled off when that passes), and the soak's memory
rule on 5-minute window medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

import psutil

REPO = Path(__file__).resolve().parents[1]
MODEL = "reference-audioqa"
VARIANTS = ("default", "nowarm", "arena2", "trim", "tracemalloc", "engine")


def _requests(work: Path) -> list[tuple[str, Path]]:
    """(question, wire audio path) of every audio-arm request, in manifest order (prepare_arms)."""
    from orchestrator.config import DatasetConfig
    from orchestrator.dataset import load_dataset, prepare_arms, resolve_dataset_path

    dataset = load_dataset(resolve_dataset_path(DatasetConfig()))
    return [(r.text, Path(r.audio_path)) for r in prepare_arms(dataset, ["audio"], work) if r.audio_path]


async def _bodies(work: Path) -> list[bytes]:
    """The chat bodies aqbench's ChatClient sends for those requests, encoded once."""
    from adapters.chat.http import ChatClient, audio_part

    client = ChatClient("http://127.0.0.1:1", MODEL)
    return [json.dumps(client.body(text, await audio_part(str(path)))).encode() for text, path in _requests(work)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tree_rss_mib(proc: psutil.Process) -> tuple[float, int]:
    """RSS summed over the process and its descendants (MiB), and their thread count."""
    rss, threads = 0, 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            rss += p.memory_info().rss
            threads += p.num_threads()
        except psutil.NoSuchProcess:
            continue
    return rss / 2**20, threads


@dataclass
class Variant:
    name: str
    proc: subprocess.Popen[bytes]
    port: int | None  # None: the in-process engine loop (it counts its own answers)
    ok: int = 0
    errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)


def _start(name: str, out: Path, args: argparse.Namespace) -> Variant:
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    log = open(folder / "stderr.log", "ab")  # noqa: SIM115  # the child writes it for its whole life
    if name == "engine":
        argv = [sys.executable, str(Path(__file__).resolve()), "engine-loop", "--out", str(folder),
                "--threads", str(args.concurrency), "--replicas", str(args.replicas)]
        return Variant(name, subprocess.Popen(argv, env=env, stdout=log, stderr=log, cwd=REPO), None)
    port = _free_port()
    argv = [sys.executable, "-m", "adapters.reference", "--host", "127.0.0.1", "--port", str(port),
            "--model-name", MODEL, "--records", str(folder / "records.jsonl"), "--replicas", str(args.replicas)]
    if name == "nowarm":
        argv.append("--no-warm-up")
    elif name == "arena2":
        env["MALLOC_ARENA_MAX"] = "2"
    elif name == "trim":
        argv += ["--malloc-trim-every", str(args.trim_every_s)]
    elif name == "tracemalloc":
        argv += ["--tracemalloc-snapshots", str(folder / "tracemalloc"),
                 "--tracemalloc-every", str(args.tracemalloc_every_s)]
    elif name != "default":
        raise SystemExit(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    return Variant(name, subprocess.Popen(argv, env=env, stdout=log, stderr=log, cwd=REPO), port)


async def _wait_ready(session, v: Variant, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if v.proc.poll() is not None:
            raise SystemExit(f"{v.name}: server exited {v.proc.returncode} before ready")
        try:
            async with session.get(f"http://127.0.0.1:{v.port}/health/ready") as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        await asyncio.sleep(1.0)
    raise SystemExit(f"{v.name}: not ready within {timeout_s:.0f} s")


async def _drive(session, v: Variant, bodies: list[bytes], offset: int, stop: asyncio.Event) -> None:
    """One closed-loop client: send the next body as soon as the previous answer is in."""
    i = offset
    url = f"http://127.0.0.1:{v.port}/v1/chat/completions"
    while not stop.is_set():
        body = bodies[i % len(bodies)]
        i += 1
        try:
            async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
                await r.read()
                v.statuses[r.status] = v.statuses.get(r.status, 0) + 1
                if r.status == 200:
                    v.ok += 1
                else:
                    v.errors += 1
                    await asyncio.sleep(1.0)  # 429 / 5xx: do not spin
        except (TimeoutError, OSError):
            v.errors += 1
            await asyncio.sleep(1.0)


def _engine_count(v: Variant) -> int:
    """The engine loop's answers so far (it rewrites DIR/engine/answers.txt every 5 s)."""
    try:
        argv = list(v.proc.args)  # type: ignore[arg-type]  # started with a list of str
        return int((Path(str(argv[argv.index("--out") + 1])) / "answers.txt").read_text() or 0)
    except (OSError, ValueError):
        return 0


async def _run(args: argparse.Namespace) -> int:
    import aiohttp

    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    bodies = await _bodies(out / "wire")
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    (out / "run.json").write_text(json.dumps({
        "variants": names, "concurrency": args.concurrency, "replicas": args.replicas,
        "duration_s": args.duration_s, "sample_every_s": args.sample_every_s, "trim_every_s": args.trim_every_s,
        "tracemalloc_every_s": args.tracemalloc_every_s, "bodies": len(bodies),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1) + "\n")
    variants = [_start(n, out, args) for n in names]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    timeout = aiohttp.ClientTimeout(total=args.request_timeout_s)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            await asyncio.gather(*(_wait_ready(session, v) for v in variants if v.port is not None))
            t0 = time.monotonic()
            drivers = [asyncio.create_task(_drive(session, v, bodies, k * 7, stop))
                       for v in variants if v.port is not None for k in range(args.concurrency)]
            # One short line per variant a sample period: a blocking write costs the drivers nothing measurable.
            with open(out / "samples.jsonl", "a", encoding="utf-8") as f:  # noqa: ASYNC230
                while not stop.is_set():
                    t = time.monotonic() - t0
                    for v in variants:
                        if v.proc.poll() is not None:
                            print(f"{v.name} exited {v.proc.returncode}", file=sys.stderr)
                            stop.set()
                            continue
                        rss, threads = tree_rss_mib(psutil.Process(v.proc.pid))
                        answered = v.ok if v.port is not None else _engine_count(v)
                        f.write(json.dumps({"t_s": round(t, 1), "utc": time.strftime("%H:%M:%S", time.gmtime()),
                                            "variant": v.name, "rss_mib": round(rss, 2), "threads": threads,
                                            "answered": answered, "errors": v.errors}) + "\n")
                    f.flush()
                    if t >= args.duration_s:
                        break
                    try:
                        await asyncio.wait_for(stop.wait(), args.sample_every_s - (time.monotonic() - t0 - t))
                    except TimeoutError:
                        pass
            stop.set()
            await asyncio.gather(*drivers)
    finally:
        for v in variants:
            if v.proc.poll() is None:
                v.proc.send_signal(signal.SIGINT)
        for v in variants:
            try:
                v.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                v.proc.kill()
    (out / "statuses.json").write_text(json.dumps({v.name: v.statuses for v in variants}, indent=1) + "\n")
    return 0


def _engine_loop(args: argparse.Namespace) -> int:
    """The engine alone: decode and answer the same requests in `threads` threads, forever (until SIGTERM)."""
    from adapters.media import decode_audio
    from adapters.reference.engine import Engine

    folder: Path = args.out
    requests = [(text, path.read_bytes(), path.suffix.lstrip(".")) for text, path in _requests(folder / "wire")]
    engine = Engine(workers=args.replicas)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    lock = threading.Lock()
    count = [0]

    def worker(offset: int) -> None:
        i = offset
        while not stop.is_set():
            text, data, fmt = requests[i % len(requests)]
            i += 1
            engine.answer(decode_audio(data, fmt), text)
            with lock:
                count[0] += 1

    threads = [threading.Thread(target=worker, args=(k * 7,), daemon=True) for k in range(args.threads)]
    for t in threads:
        t.start()
    counter = folder / "answers.txt"
    while not stop.wait(5.0):
        counter.write_text(str(count[0]))
    for t in threads:
        t.join(timeout=120)
    counter.write_text(str(count[0]))
    return 0


def _load(folder: Path) -> dict[str, list[dict]]:
    """Per variant, one row per minute: the median RSS of that minute's samples and the last count."""
    raw: dict[str, dict[int, list[dict]]] = {}
    for line in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        raw.setdefault(row["variant"], {}).setdefault(int(row["t_s"] // 60), []).append(row)
    return {name: [{"t_s": (m + 0.5) * 60, "rss_mib": median(r["rss_mib"] for r in rows),
                    "answered": rows[-1]["answered"]} for m, rows in sorted(minutes.items())]
            for name, minutes in raw.items()}


def _interval(est_slope: float | None, interval: tuple[float, float] | None) -> str:
    if est_slope is None:
        return "n/a"
    return f"{est_slope:+.1f}" + (f" [{interval[0]:+.1f}, {interval[1]:+.1f}]" if interval else "")


def analyse(folders: list[Path], warmup_min: float, window_min: float = 5.0, limit: float = 8.0) -> str:
    """Markdown: per variant the RSS at start, after the warm-up and at the end; the Theil-Sen slope (MiB/h,
    95 % interval) of the per-minute medians after the warm-up and of the last 30 minutes, each judged
    against `limit` (the last 30 minutes passing = it levels off); the soak's memory rule on `window_min`
    medians after the warm-up; then those window medians."""
    from orchestrator.judge.memory import MemoryRule, judge_memory_medians
    from orchestrator.judge.trend import judge_trend

    rows = [f"| variant | answered | RSS start / {warmup_min:g} min / end (MiB) | slope after {warmup_min:g} min, "
            "MiB/h [95 %] | verdict | last 30 min, MiB/h [95 %] | levels off | memory rule on "
            f"{window_min:g}-min medians |", "|---|---|---|---|---|---|---|---|"]
    series = [f"| variant | {window_min:g}-min median RSS from the start (MiB) |", "|---|---|"]
    for folder in folders:
        for name, samples in _load(folder).items():
            label = name if len(folders) == 1 else f"{name} ({folder.name})"
            windows: dict[int, list[float]] = {}
            for s in samples:
                windows.setdefault(int((s["t_s"] - 30) // (window_min * 60)), []).append(s["rss_mib"])
            series.append(f"| {label} | {' '.join(f'{median(windows[k]):.0f}' for k in sorted(windows))} |")
            kept = [s for s in samples if s["t_s"] >= warmup_min * 60]
            if len(kept) < 3:
                rows.append(f"| {label} | {samples[-1]['answered']} | too short | | | | | |")
                continue
            th = [s["t_s"] / 3600 for s in kept]
            rss = [s["rss_mib"] for s in kept]
            whole = judge_trend(th, rss, limit, unit="MiB/h")
            tail = [i for i, s in enumerate(kept) if s["t_s"] >= kept[-1]["t_s"] - 1800]
            last = judge_trend([th[i] for i in tail], [rss[i] for i in tail], limit, unit="MiB/h")
            keys = sorted(k for k in windows if k * window_min >= warmup_min)
            mem = judge_memory_medians([(k + 0.5) * window_min / 60 for k in keys], [median(windows[k]) for k in keys],
                                       MemoryRule(limit_mib_per_h=limit))
            rows.append(
                f"| {label} | {samples[-1]['answered']} | {samples[0]['rss_mib']:.0f} / {kept[0]['rss_mib']:.0f} / "
                f"{samples[-1]['rss_mib']:.0f} | {_interval(whole.slope_per_h, whole.interval_per_h)} | "
                f"{whole.outcome} | {_interval(last.slope_per_h, last.interval_per_h)} | {last.outcome} | "
                f"{mem.outcome}: growth {mem.growth_mib if mem.growth_mib is not None else float('nan'):+.1f} MiB |")
    return "\n".join([*rows, "", *series]) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="start the variants and sample their RSS until --duration-s")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--duration-s", type=float, default=7200.0)
    r.add_argument("--variants", default=",".join(VARIANTS))
    r.add_argument("--concurrency", type=int, default=1, help="closed-loop clients per variant")
    r.add_argument("--replicas", type=int, default=2)
    r.add_argument("--sample-every-s", type=float, default=10.0, help="RSS samples; analysed as per-minute medians")
    r.add_argument("--trim-every-s", type=float, default=60.0)
    r.add_argument("--tracemalloc-every-s", type=float, default=600.0)
    r.add_argument("--request-timeout-s", type=float, default=120.0)
    e = sub.add_parser("engine-loop", help=argparse.SUPPRESS)
    e.add_argument("--out", type=Path, required=True)
    e.add_argument("--threads", type=int, default=1)
    e.add_argument("--replicas", type=int, default=2)
    a = sub.add_parser("analyse", help="per-variant slopes and plateaus from DIR/samples.jsonl")
    a.add_argument("folders", type=Path, nargs="+")
    a.add_argument("--warmup-min", type=float, default=10.0)
    args = ap.parse_args(argv)
    if args.cmd == "run":
        return asyncio.run(_run(args))
    if args.cmd == "engine-loop":
        return _engine_loop(args)
    print(analyse(args.folders, args.warmup_min), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
