"""A scripted server that behaves as trtmc-server's Python front end does when its worker dies.

The front end starts one worker in a new session (as TRTMC's launcher does), armed with the parent-death
signal (PR_SET_PDEATHSIG, SIGTERM): the worker dies with the front end, re-parented to whoever reaps orphans.
While the worker lives, GET /health/ready is 200; once it died, 503 `{"status":"not_ready"}` and chat requests
get 503 `worker_crashed` (the first) then `server_draining`. The front end never exits on its own: only a stop
signal ends it (re-raised, as uvicorn does). Plain asyncio; prints JSON lines `listening` and `worker`.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _say(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, "level": "info", "mono_ns": time.monotonic_ns(), **fields}), flush=True)


def _arm_parent_death() -> None:
    """In the worker, before exec: the kernel sends SIGTERM when the front end (its parent) dies."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def _start_worker(dies_after_s: float | None) -> subprocess.Popen[bytes]:
    code = (f"import time; time.sleep({dies_after_s}); raise SystemExit(3)" if dies_after_s is not None
            else "import time; time.sleep(600)")
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True, preexec_fn=_arm_parent_death,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Front:
    def __init__(self, args: argparse.Namespace, worker: subprocess.Popen[bytes]) -> None:
        self.args = args
        self.worker = worker
        self.crash_told = False

    def worker_alive(self) -> bool:
        return self.worker.poll() is None  # the front end reaps its own worker, as asyncio's watcher would

    def answer(self, path: str) -> tuple[int, dict[str, object]]:
        alive = self.worker_alive()
        if path == "/health/ready":
            return (200, {"status": "ready", "degraded": False}) if alive else \
                (503, {"status": "not_ready", "reason": "worker_crashed"})
        if path == "/health/live":
            return 200, {"status": "live"}
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": self.args.model_name, "object": "model"}]}
        if path.startswith("/v1/chat/completions"):
            if alive:
                return 200, {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                             "model": self.args.model_name,
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                          "finish_reason": None}],
                             "usage": {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1}}
            code = "server_draining" if self.crash_told else "worker_crashed"
            self.crash_told = True
            return 503, {"error": {"message": code.replace("_", " "), "type": "server_error", "param": None,
                                   "code": code}}
        return 404, {"error": {"message": f"no route {path}", "code": "not_found"}}


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, front: Front) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ", 2)[1].decode()
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        if length:
            await reader.readexactly(length)
        status, doc = front.answer(path)
        body = json.dumps(doc).encode()
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                     "Connection: close\r\n\r\n".encode() + body)
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(args: argparse.Namespace) -> None:
    dies = args.worker_dies_after
    if args.worker_dies_once:  # only the first incarnation's worker dies: the restarted one lives
        once = Path(args.worker_dies_once)
        dies = None if once.exists() else dies
        once.touch()
    worker = _start_worker(dies)
    _say("worker", worker_pid=worker.pid)
    front = Front(args, worker)
    stop = asyncio.Event()
    stopped_by: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(sig: signal.Signals) -> None:
        stopped_by.append(sig)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    server = await asyncio.start_server(lambda r, w: _handle(r, w, front), args.host, args.port)
    _say("listening", port=args.port)
    async with server:
        await stop.wait()  # a dead worker never ends the front end: only a stop signal does
    # The worker is not told: it dies of the parent-death signal once this process is gone.
    signal.signal(stopped_by[0], signal.SIG_DFL)
    os.kill(os.getpid(), stopped_by[0])


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--model-name", default="test-model")
    p.add_argument("--records", default="")
    p.add_argument("--worker-dies-after", type=float, default=None, help="the worker exits 3 after this long")
    p.add_argument("--worker-dies-once", default="", help="a flag file: only the start that creates it has a dying worker")
    asyncio.run(main(p.parse_args()))
