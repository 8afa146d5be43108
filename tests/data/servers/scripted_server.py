"""A small scripted HTTP server for supervisor tests: trtmc-server's health routes plus fault modes.

Plain asyncio (starts in ~50 ms, no aiohttp import). Routes: GET /health/ready, GET /v1/models.
Prints a JSON line `{"event": "listening", "mono_ns": ...}` once its socket accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import traceback


def _say(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, "level": "info", "mono_ns": time.monotonic_ns(), **fields}), flush=True)


def _daemonize() -> int:
    """Double-fork a sleeper into its own session with an empty environment (as a worker launcher with an
    allow-listed environment does): no marker, outside our group, born after any sample. Its pid, returned
    once the sleeper runs its own program (it says so on a pipe after exec), so whoever finds it sees that
    program's command line and not a copy of ours."""
    read_end, write_end = os.pipe()
    first = os.fork()
    if first == 0:
        os.close(read_end)
        os.setsid()
        second = os.fork()
        if second == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.set_inheritable(write_end, True)
            code = (f"import os, time; os.write({write_end}, str(os.getpid()).encode()); os.close({write_end}); "
                    "time.sleep(600)")
            os.execve(sys.executable, [sys.executable, "-c", code], {})
        os._exit(0)
    os.close(write_end)
    pid = int(os.read(read_end, 32))
    os.close(read_end)
    os.waitpid(first, 0)  # the middle process is reaped here: only the sleeper is left, orphaned
    return pid


class Behaviour:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ready_at = 0.0
        self.first_ready_answer = 0.0
        self.in_flight = [int(v) for v in args.in_flight.split(",") if v]

    def since_ready(self) -> float:
        return time.monotonic() - self.ready_at

    async def ready_answer(self) -> tuple[int, dict[str, object]]:
        a = self.args
        if a.hang_after is not None and self.since_ready() >= a.hang_after:
            await asyncio.sleep(3600)  # health stops answering; the loop itself stays alive
        if a.not_ready_after is not None:
            # Counted from the first ready answer, not from start-up: on a loaded machine the first probe may
            # come later than the whole window, and the server would never have been ready at all.
            now = time.monotonic()
            self.first_ready_answer = self.first_ready_answer or now
            if now - self.first_ready_answer >= a.not_ready_after:
                return 503, {"status": "not_ready", "degraded": True}
        degraded = a.degraded_after is not None and self.since_ready() >= a.degraded_after
        return 200, {"status": "ready", "degraded": degraded}

    def models(self) -> dict[str, object]:
        name = self.args.listed_model or self.args.model_name
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "test"}]}


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, b: Behaviour) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ", 2)[1].decode()
        if path == "/health/ready":
            status, doc = await b.ready_answer()
        elif path == "/v1/models":
            status, doc = 200, b.models()
        elif path == "/health/live":
            status, doc = 200, {"status": "live"}
        elif path == "/metrics" and b.in_flight:
            # The reference server's gauge, as Prometheus text: the next scripted value (the last one stays).
            value = b.in_flight.pop(0) if len(b.in_flight) > 1 else b.in_flight[0]
            text = f"# TYPE aqbench_reference_active_requests gauge\naqbench_reference_active_requests {value}\n"
            writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {len(text)}\r\n"
                         "Connection: close\r\n\r\n".encode() + text.encode())
            await writer.drain()
            return
        else:
            status, doc = 404, {"error": {"message": f"no route {path}", "code": "not_found"}}
        body = json.dumps(doc).encode()
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                     "Connection: close\r\n\r\n".encode() + body)
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(args: argparse.Namespace) -> None:
    _say("starting", pid=os.getpid())
    print("plain text line on stderr", file=sys.stderr, flush=True)
    if args.grandchild:
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _say("grandchild", grandchild_pid=child.pid)
    if args.gpu_mib:
        import torch  # type: ignore[import-not-found]  # only the GPU test asks for this; it holds the tensor for the server's life

        args.gpu_tensor = torch.empty(args.gpu_mib * 2**20, dtype=torch.uint8, device="cuda")
        _say("gpu_allocated", mib=args.gpu_mib)
    if args.crash_on_start:
        print("fatal: cannot load bundle (scripted crash)", file=sys.stderr, flush=True)
        sys.exit(3)
    await asyncio.sleep(args.startup_delay)
    if args.hold_mib:  # after the start-up delay: the sample taken at spawn sees none of it
        args.held = bytearray(b"\x01") * (args.hold_mib * 2**20)  # written, so resident
        _say("memory_held", mib=args.hold_mib)
    b = Behaviour(args)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    stopped_by: list[int] = []
    if args.ignore_stop:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        def on_signal(sig: signal.Signals) -> None:
            stopped_by.append(sig)
            stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal, sig)
    server = await asyncio.start_server(lambda r, w: _handle(r, w, b), args.host, args.port)
    b.ready_at = time.monotonic()
    _say("listening", port=args.port)
    async with server:
        await stop.wait()
    _say("stopped", signal=stopped_by[0])
    if args.daemon_at_stop:
        _say("daemonized", daemon_pid=_daemonize())
    if args.traceback_at_stop:  # as uvicorn's KeyboardInterrupt unwinding prints one (or a shutdown bug would)
        try:
            raise {"KeyboardInterrupt": KeyboardInterrupt, "RuntimeError": RuntimeError}[args.traceback_at_stop]()
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
    # Uvicorn re-raises the stop signal, so the parent sees death by that signal even on a clean stop.
    signal.signal(stopped_by[0], signal.SIG_DFL)
    os.kill(os.getpid(), stopped_by[0])


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--model-name", default="test-model")
    p.add_argument("--listed-model", default="")
    p.add_argument("--records", default="")
    p.add_argument("--startup-delay", type=float, default=0.0)
    p.add_argument("--crash-on-start", action="store_true")
    p.add_argument("--hang-after", type=float, default=None)
    p.add_argument("--not-ready-after", type=float, default=None, help="503 not_ready this long after the first ready answer")
    p.add_argument("--degraded-after", type=float, default=None)
    p.add_argument("--ignore-stop", action="store_true")
    p.add_argument("--grandchild", action="store_true")
    p.add_argument("--gpu-mib", type=int, default=0)
    p.add_argument("--hold-mib", type=int, default=0)
    p.add_argument("--daemon-at-stop", action="store_true")
    p.add_argument("--in-flight", default="", help="serve /metrics with these active-request gauge values, in turn")
    p.add_argument("--traceback-at-stop", choices=["KeyboardInterrupt", "RuntimeError"], default="",
                   help="print this exception's traceback on stderr as the stop unwinds")
    asyncio.run(main(p.parse_args()))
