"""Run the reference server: flags, engine load before the port opens, graceful drain on SIGINT/SIGTERM.

`python -m adapters.reference` and `aqbench serve-reference` share `add_server_arguments` and `serve`.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import anyio.to_thread
from aiohttp import web

from adapters.reference.app import ServerSettings, ServerState, build_app
from adapters.reference.asr import COMPUTE_TYPES
from adapters.reference.engine import Engine
from adapters.reference.faults import FaultSettings, FaultState
from adapters.reference.gpu import GpuSettings, GpuUnavailable, GpuWorker
from adapters.reference.heap import (
    DEFAULT_ARENAS,
    DEFAULT_MMAP_THRESHOLD_KIB,
    DEFAULT_TRIM_EVERY_S,
    HeapSettings,
    SnapshotWriter,
    fix_mmap_threshold,
    limit_arenas,
    snapshot_every,
    trim_every,
    warm_up_from_env,
)
from adapters.reference.router import Kind
from adapters.trtmc.records import RecordWriter
from orchestrator.config.flags import add_deprecated_alias, deprecation_lines, duration_arg

__all__ = ["add_server_arguments", "settings_from_args", "heap_from_args", "gpu_from_args", "serve", "main"]


def _duration_or_off(text: str) -> float:
    """A duration flag where 0 means off."""
    return 0.0 if text.strip().removesuffix("s") in ("0", "0.0") else duration_arg(text)


def add_server_arguments(p: argparse.ArgumentParser) -> None:
    """The server's flags (same names as trtmc-server where they exist, plus fault injection)."""
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    p.add_argument("--model-name", required=True, help="the model id clients must send")
    p.add_argument("--replicas", type=int, default=1, help="engine workers; busy ones give 429")
    p.add_argument("--records", type=Path, default=None, help="append one JSON line per chat request")
    p.add_argument("--max-body-bytes", type=int, default=32 * 1024 * 1024,
                   help="413 above this request size (default 32 MiB)")
    p.add_argument("--request-timeout", type=duration_arg, default=120.0, metavar="DURATION",
                   help="504 when the engine takes longer (default 120s)")
    add_deprecated_alias(p, "--max-audio-seconds", p.add_argument(
        "--max-audio-duration", type=duration_arg, default=60.0, metavar="DURATION",
        help="400 for longer audio (default 60s)"))
    p.add_argument("--cpu-threads", type=int, default=0,
                   help="CTranslate2 threads per replica (0 = its default)")
    p.add_argument("--openai-finish-reason", action="store_true",
                   help="answer finish_reason stop/length and end a stream with a finish chunk, as OpenAI "
                        "does (default: finish_reason null and no finish chunk, as trtmc-server)")
    p.add_argument("--compute-type", default="int8", choices=COMPUTE_TYPES,
                   help="CTranslate2 compute type of the speech model (default int8; float32 = the same model "
                        "files at full precision, a reference for the int8 server)")
    p.add_argument("--no-speech-models", action="store_true",
                   help="load neither the Silero VAD nor Whisper (faster-whisper need not be installed): answer "
                        "questions about tones, silence and channel, and refuse the others with a sentence naming "
                        "this flag (a GPU host whose image cannot run CTranslate2, say)")
    p.add_argument("--memoize-answers", type=int, default=0, metavar="N",
                   help="keep the last N distinct answers, keyed by the decoded audio and the question, and answer a "
                        "repeat from them without the analyses (default 0: off). For tests of the load side (long "
                        "soaks at tens of requests a second): the first answer to each is computed as ever")
    h = p.add_argument_group("heap (memory measurement and care)")
    h.add_argument("--no-warm-up", action="store_true",
                   help="open the port right after loading the models, without one warm-up pass through every "
                        "stage (the pass moves first-use memory, about 70 MiB of it scipy, before the first request); "
                        "AQBENCH_REFERENCE_WARM_UP=0 in the environment does the same")
    h.add_argument("--malloc-arenas", type=int, default=DEFAULT_ARENAS, metavar="N",
                   help=f"cap glibc's malloc arenas at N (default {DEFAULT_ARENAS}; 0: glibc's own, 8 per core): every "
                        "thread that runs an engine call otherwise keeps an arena's high-water mark of its own")
    h.add_argument("--malloc-mmap-threshold-kib", type=int, default=DEFAULT_MMAP_THRESHOLD_KIB, metavar="KIB",
                   help="serve blocks of KIB KiB and more by mmap, and keep that threshold fixed (default 0: glibc's "
                        "own, which slides up to the largest block freed); 128 keeps a long request's buffers out "
                        "of the heap, at about 1.5x the engine's time")
    add_deprecated_alias(h, "--malloc-trim-every-s", h.add_argument(
        "--malloc-trim-every", type=_duration_or_off, default=DEFAULT_TRIM_EVERY_S, metavar="DURATION",
        help=f"call glibc malloc_trim(0) this often, returning freed heap pages to the system "
             f"(default {DEFAULT_TRIM_EVERY_S:g}s; 0: off)"))
    h.add_argument("--tracemalloc-snapshots", type=Path, default=None, metavar="DIR",
                   help="trace Python allocations and write, at start and every --tracemalloc-every, the "
                        "allocation sites that grew (DIR/tracemalloc-NNN.txt); for diagnosis only: it slows "
                        "some engine calls many times over")
    add_deprecated_alias(h, "--tracemalloc-every-s", h.add_argument(
        "--tracemalloc-every", type=duration_arg, default=600.0, metavar="DURATION",
        help="time between tracemalloc snapshots (default 10m)"))
    u = p.add_argument_group("GPU (a worker process holding device memory, as a model server's; torch or cupy)")
    u.add_argument("--gpu-ballast-mib", type=float, default=0.0, metavar="MIB",
                   help="hold MIB MiB of GPU memory from the start in a GPU worker process, as a model's weights "
                        "(default 0: no GPU worker); exits 2 where no GPU or neither torch nor cupy is present")
    u.add_argument("--gpu-work-ms", type=float, default=0.0, metavar="MS",
                   help="run MS ms of matrix products on the GPU per chat request, as a forward pass (default 0)")
    g = p.add_argument_group("fault injection (off by default; for orchestrator tests)")
    g.add_argument("--fault-crash-after", type=int, default=None, metavar="N",
                   help="exit(70) when chat request N+1 arrives")
    g.add_argument("--fault-worker-crash-after", type=int, default=None, metavar="N",
                   help="each chat request after N kills its replica (503 worker_crashed); the server keeps "
                        "running, readiness degraded, then 503 not_ready when none is left (as trtmc-server)")
    g.add_argument("--fault-hang-after", type=int, default=None, metavar="N",
                   help="after N chat requests stop answering every route, health included")
    g.add_argument("--fault-latency-ms", type=float, default=0.0, metavar="MS",
                   help="extra latency inside every engine call (or those chosen by the two shares below)")
    g.add_argument("--fault-latency-share", type=float, default=1.0, metavar="S",
                   help="add --fault-latency-ms to this share of chat requests only (0..1), chosen by a hash of "
                        "each request's X-Request-ID (of its content where it has none), so the share holds in "
                        "every block and server start (default 1: every request)")
    g.add_argument("--fault-latency-item-share", type=float, default=1.0, metavar="S",
                   help="add --fault-latency-ms to this share of items only (0..1), chosen by a hash of the audio "
                        "and question, so the same items are slow on every request (default 1: every item)")
    g.add_argument("--fault-error-rate", type=float, default=0.0, metavar="F",
                   help="answer this share of chat requests with 500 (exact, deterministic pattern)")
    add_deprecated_alias(g, "--fault-startup-delay-s", g.add_argument(
        "--fault-startup-delay", type=_duration_or_off, default=0.0, metavar="DURATION",
        help="wait this long before loading the engine (port closed meanwhile; default 0)"))
    g.add_argument("--fault-leak-mib", type=float, default=0.0, metavar="K",
                   help="keep K MiB of memory per chat request, forever")
    g.add_argument("--fault-gpu-leak-mib", type=float, default=0.0, metavar="K",
                   help="keep K MiB more GPU memory per chat request, forever, in the GPU worker (exits 2 where no GPU "
                        "or GPU library is present)")
    g.add_argument("--fault-wrong-kind", action="append", default=[], metavar="KIND",
                   choices=[k.value for k in Kind],
                   help="answer every question routed to analysis KIND with a complete but wrong sentence "
                        f"(repeatable; {', '.join(k.value for k in Kind)})")
    g.add_argument("--fault-wrong-item-share", type=float, default=0.0, metavar="S",
                   help="answer this share of items (0..1) with a complete but wrong sentence; an item is chosen "
                        "by a hash of its audio and question, so the same items every time")
    g.add_argument("--fault-swap-above", type=int, default=None, metavar="N",
                   help="with more than N chat requests in flight, answer with the previous request's answer")
    g.add_argument("--fault-truncate-above", type=int, default=None, metavar="N",
                   help="with more than N chat requests in flight, answer with the first half of the answer's "
                        "words, not marked truncated")


def settings_from_args(args: argparse.Namespace) -> ServerSettings:
    """Validate the flags; raises ValueError naming the flag and what is allowed."""
    try:
        if not ipaddress.ip_address(args.host).is_loopback:
            raise ValueError
    except ValueError:
        raise ValueError(f"--host {args.host!r} is not a loopback address; use 127.0.0.1 or ::1 "
                         "(the reference server never listens beyond this machine)") from None
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port {args.port} is out of range 0-65535")
    if args.replicas < 1:
        raise ValueError(f"--replicas {args.replicas} must be at least 1")
    for flag in ("fault_error_rate", "fault_wrong_item_share", "fault_latency_share", "fault_latency_item_share"):
        if not 0.0 <= getattr(args, flag) <= 1.0:
            raise ValueError(f"--{flag.replace('_', '-')} {getattr(args, flag)} must be within 0..1")
    for flag in ("max_body_bytes", "request_timeout", "max_audio_duration"):
        if getattr(args, flag) <= 0:
            raise ValueError(f"--{flag.replace('_', '-')} must be positive")
    return ServerSettings(
        host=args.host, port=args.port, model_name=args.model_name, replicas=args.replicas,
        records=args.records, max_body_bytes=args.max_body_bytes,
        request_timeout_s=args.request_timeout, max_audio_s=args.max_audio_duration,
        openai_finish_reason=args.openai_finish_reason,
        faults=FaultSettings(crash_after=args.fault_crash_after, worker_crash_after=args.fault_worker_crash_after,
                             hang_after=args.fault_hang_after,
                             latency_ms=args.fault_latency_ms, latency_share=args.fault_latency_share,
                             latency_item_share=args.fault_latency_item_share, error_rate=args.fault_error_rate,
                             startup_delay_s=args.fault_startup_delay, leak_mib=args.fault_leak_mib,
                             wrong_kinds=tuple(args.fault_wrong_kind),
                             wrong_item_share=args.fault_wrong_item_share,
                             swap_above=args.fault_swap_above, truncate_above=args.fault_truncate_above))


def heap_from_args(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> HeapSettings:
    """The heap flags (and AQBENCH_REFERENCE_WARM_UP from `environ`, os.environ if None); raises ValueError naming
    the flag or the variable."""
    if args.malloc_trim_every < 0:
        raise ValueError(f"--malloc-trim-every {args.malloc_trim_every} must be 0 (off) or positive")
    if args.malloc_arenas < 0:
        raise ValueError(f"--malloc-arenas {args.malloc_arenas} must be 0 (glibc's default) or positive")
    if not 0 <= args.malloc_mmap_threshold_kib <= 32 * 1024:
        raise ValueError(f"--malloc-mmap-threshold-kib {args.malloc_mmap_threshold_kib} must be 0 (glibc's sliding "
                         "default) or 1..32768 (glibc's maximum, 32 MiB)")
    if args.tracemalloc_every <= 0:
        raise ValueError(f"--tracemalloc-every {args.tracemalloc_every} must be positive")
    return HeapSettings(warm_up=not args.no_warm_up and warm_up_from_env(os.environ if environ is None else environ), malloc_arenas=args.malloc_arenas,
                        mmap_threshold_kib=args.malloc_mmap_threshold_kib, malloc_trim_every_s=args.malloc_trim_every,
                        tracemalloc_dir=args.tracemalloc_snapshots, tracemalloc_every_s=args.tracemalloc_every)


def gpu_from_args(args: argparse.Namespace) -> GpuSettings:
    """The GPU flags; raises ValueError naming the flag."""
    for flag in ("gpu_ballast_mib", "gpu_work_ms", "fault_gpu_leak_mib"):
        if getattr(args, flag) < 0:
            raise ValueError(f"--{flag.replace('_', '-')} {getattr(args, flag):g} must be 0 (off) or positive")
    return GpuSettings(ballast_mib=args.gpu_ballast_mib, leak_mib=args.fault_gpu_leak_mib, work_ms=args.gpu_work_ms)


def _log(event: str, **fields: object) -> None:
    """One key=value line on stderr (the supervisor keeps the tail as evidence)."""
    parts = " ".join(f"{k}={v}" for k, v in fields.items())
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} reference {event} {parts}", file=sys.stderr, flush=True)


async def serve(settings: ServerSettings, cpu_threads: int = 0, compute_type: str = "int8",
                heap: HeapSettings = HeapSettings(), gpu: GpuSettings = GpuSettings(), speech_models: bool = True,
                memo_size: int = 0) -> int:
    """Load the engine, then listen; on SIGINT/SIGTERM stop admitting, finish running requests, 0.
    2 where the GPU options were asked for and no GPU or GPU library is present."""
    if settings.faults.startup_delay_s:
        _log("startup_delay", s=settings.faults.startup_delay_s)  # said first: tests wait for it, not a fixed time
        await asyncio.sleep(settings.faults.startup_delay_s)
    worker = GpuWorker(gpu) if gpu.wanted else None
    if worker is not None:
        try:  # before the engine: a host without a GPU is told so in a second, not after the models load
            await anyio.to_thread.run_sync(worker.start)
        except GpuUnavailable as exc:
            _log("gpu_unavailable", reason=f"'{exc}'")
            print(f"reference: GPU options cannot run here: {exc}", file=sys.stderr, flush=True)
            return 2
        _log("gpu_worker", device=f"'{worker.device}'")
    try:
        return await _serve(settings, cpu_threads, compute_type, heap, worker, speech_models, memo_size)
    finally:
        if worker is not None:
            worker.stop()


async def _serve(settings: ServerSettings, cpu_threads: int, compute_type: str, heap: HeapSettings,
                 worker: GpuWorker | None, speech_models: bool, memo_size: int = 0) -> int:
    if heap.malloc_arenas:
        limit_arenas(heap.malloc_arenas)  # before any worker thread takes an arena of its own
    if heap.mmap_threshold_kib:
        fix_mmap_threshold(heap.mmap_threshold_kib)  # before the first long request can slide it
    t0 = time.perf_counter()
    engine = await anyio.to_thread.run_sync(lambda: Engine(workers=settings.replicas,
                                                           cpu_threads=cpu_threads,
                                                           compute_type=compute_type,
                                                           speech_models=speech_models,
                                                           memo_size=memo_size))
    load_s = time.perf_counter() - t0
    if heap.warm_up:
        await anyio.to_thread.run_sync(engine.warm_up)
    warm_up_s = time.perf_counter() - t0 - load_s
    # Traced from here: the model load's allocations are not the growth looked for.
    snapshots = SnapshotWriter(heap.tracemalloc_dir) if heap.tracemalloc_dir is not None else None
    state = ServerState(settings=settings, engine=engine, records=RecordWriter(settings.records),
                        faults=FaultState(settings.faults),
                        free_replicas=[f"replica-{i}" for i in range(settings.replicas)],
                        gpu_request=worker.request if worker is not None else None)
    runner = web.AppRunner(build_app(state), handle_signals=False, access_log=None)
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    received: list[str] = []

    def _on_signal(sig: signal.Signals) -> None:
        received.append(sig.name)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, _on_signal, sig)
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((settings.host, settings.port))
    site = web.SockSite(runner, sock)
    await site.start()
    chores: list[asyncio.Task[None]] = []
    if heap.malloc_trim_every_s:
        chores.append(asyncio.create_task(trim_every(heap.malloc_trim_every_s, state.heap)))
    if snapshots is not None:
        snapshots.write()  # the baseline: the engine loaded, no request yet
        state.heap.snapshots = snapshots.written
        chores.append(asyncio.create_task(snapshot_every(heap.tracemalloc_every_s, snapshots, state.heap)))
    _log("ready", host=settings.host, port=sock.getsockname()[1], model=settings.model_name,
         replicas=settings.replicas, compute_type=compute_type, load_s=f"{load_s:.2f}", warm_up_s=f"{warm_up_s:.2f}",
         faults=",".join(settings.faults.active) or "none", heap=",".join(heap.active) or "none",
         gpu=",".join(worker.settings.active) if worker is not None else "none")
    try:
        await stop.wait()
        state.draining = True
        _log("draining", signal=received[0] if received else "?", active=state.active)
        await state.idle.wait()
    finally:
        for chore in chores:
            chore.cancel()
        await runner.cleanup()
        state.records.close()
    _log("stopped")
    return 0


def main(argv: list[str] | None = None, prog: str = "python -m adapters.reference") -> int:
    p = argparse.ArgumentParser(prog=prog, description="The aqbench reference audio-QA server.")
    add_server_arguments(p)
    args = p.parse_args(argv)
    if args.memoize_answers < 0:
        p.error(f"--memoize-answers must be 0 (off) or a positive number of answers, not {args.memoize_answers}")
    for line in deprecation_lines(args):
        _log("deprecated_flag", detail=line)
    try:
        settings = settings_from_args(args)
        heap = heap_from_args(args)
        gpu = gpu_from_args(args)
    except ValueError as exc:
        p.error(str(exc))
    return asyncio.run(serve(settings, cpu_threads=args.cpu_threads, compute_type=args.compute_type, heap=heap,
                             gpu=gpu, speech_models=not args.no_speech_models,
                             memo_size=args.memoize_answers))
