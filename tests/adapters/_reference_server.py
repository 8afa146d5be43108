"""Start the reference server as a real subprocess on a free loopback port (shared by the reference tests)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from server_env import warmed_env

REPO = Path(__file__).resolve().parents[2]
DATASET = REPO / "datasets" / "audioqa-v1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, proc: subprocess.Popen, port: int, records: Path, stderr: Path) -> None:
        self.proc, self.port, self.records, self.stderr = proc, port, records, stderr
        self.url = f"http://127.0.0.1:{port}"


@contextmanager
def reference_server(tmp: Path, *flags: str, model: str = "ref-test", wait: bool = True,
                     warm_up: bool = False) -> Iterator[Server]:
    """Run `python -m adapters.reference`; waits for /health/ready; SIGKILLs it if still alive at exit. Its warm-up
    pass runs only if `warm_up` (the suite turns it off: tests/server_env.py)."""
    port = free_port()
    records = tmp / f"records-{port}.jsonl"
    stderr = tmp / f"server-{port}.err"
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "adapters.reference", "--host", "127.0.0.1", "--port", str(port),
             "--model-name", model, "--records", str(records), *flags],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
            env={**(warmed_env() if warm_up else os.environ), "OMP_NUM_THREADS": "1"})
    server = Server(proc, port, records, stderr)
    try:
        if wait:
            wait_ready(server)
        yield server
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextmanager
def shared_reference_server(tmp: Path, shared: set[int], *flags: str) -> Iterator[Server]:
    """A reference server shared by several tests: its pid is in `shared` (conftest's `shared_processes`, so the
    per-test leftover check lets it be) while it runs, and at the end it stops on SIGINT with exit 0."""
    with reference_server(tmp, *flags) as s:
        shared.add(s.proc.pid)
        try:
            yield s
            s.proc.send_signal(signal.SIGINT)
            assert s.proc.wait(timeout=20) == 0
        finally:
            shared.discard(s.proc.pid)


def wait_ready(server: Server, timeout_s: float = 180.0) -> None:  # model load and warm-up on a busy machine
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise AssertionError(f"server exited {server.proc.returncode}: "
                                 f"{server.stderr.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(server.url + "/health/ready", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"server not ready after {timeout_s} s")
