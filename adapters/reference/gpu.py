"""The reference server's GPU worker, the parent's side: start the child (adapters/reference/gpu_child.py), which
holds device memory as a model server's worker does, and tell it of each request.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from dataclasses import dataclass

__all__ = ["GpuSettings", "GpuUnavailable", "GpuWorker", "gpu_library"]

# Start-up budget of the child: importing torch and creating a CUDA context takes 5-20 s on a cold host.
_READY_TIMEOUT_S = 120.0


_FLAGS = {"ballast_mib": "--gpu-ballast-mib", "leak_mib": "--fault-gpu-leak-mib", "work_ms": "--gpu-work-ms"}


class GpuUnavailable(Exception):
    """The GPU options were asked for where no GPU or no GPU library is present (the server exits 2)."""


# `--gpu-ballast-mib` is held from the start (a model's weights), `--fault-gpu-leak-mib` more per chat request, kept
# forever, `--gpu-work-ms` of matrix products per request (a forward pass, so utilisation reads what the load does).
# Only the child imports torch or cupy, so the front end stays light and the tree has two levels, as a TRTMC server's.
@dataclass(frozen=True, slots=True)
class GpuSettings:
    ballast_mib: float = 0.0
    leak_mib: float = 0.0
    work_ms: float = 0.0

    @property
    def wanted(self) -> bool:
        return bool(self.ballast_mib or self.leak_mib or self.work_ms)

    @property
    def active(self) -> list[str]:
        return [n for n in ("ballast_mib", "leak_mib", "work_ms") if getattr(self, n)]


def gpu_library() -> str:
    """The library the worker would use ("torch", "cupy"), or "" where neither is installed (nothing imported)."""
    return next((name for name in ("torch", "cupy") if importlib.util.find_spec(name) is not None), "")


class GpuWorker:
    """The parent's side: start the child, wait until it holds the ballast, tell it of each request.

    `start` blocks (up to 120 s); `request` never blocks the event loop for long (one short line to a pipe)."""

    def __init__(self, settings: GpuSettings) -> None:
        self.settings = settings
        self._proc: subprocess.Popen[str] | None = None
        self.device = ""
        self.pid = 0  # the worker child, once started

    def start(self) -> None:
        """Spawn the child and wait for its 'ready' line; GpuUnavailable with its reason otherwise."""
        lib = gpu_library()
        flags = ", ".join(_FLAGS[n] for n in self.settings.active)
        if not lib:
            raise GpuUnavailable(f"{flags}: no GPU library: neither torch nor cupy is installed for {sys.executable}; "
                                 "install one of them, or run without the GPU options")
        s = self.settings
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "adapters.reference.gpu_child", "--library", lib, "--ballast-mib", f"{s.ballast_mib:g}",
             "--leak-mib", f"{s.leak_mib:g}", "--work-ms", f"{s.work_ms:g}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        assert self._proc.stdout is not None
        deadline = time.monotonic() + _READY_TIMEOUT_S
        line = ""
        while time.monotonic() < deadline and not line:
            line = self._proc.stdout.readline().strip()
            if not line and self._proc.poll() is not None:
                break
        if not line.startswith("ready"):
            self.stop()
            why = line.removeprefix("error ").strip() or "the GPU worker exited without a word (its stderr is above)"
            raise GpuUnavailable(f"{flags}: {why}")
        self.device = line.removeprefix("ready").strip()
        self.pid = self._proc.pid

    def request(self) -> None:
        """One chat request admitted: the child keeps --fault-gpu-leak-mib and runs --gpu-work-ms."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.poll() is not None:
            return
        try:
            proc.stdin.write("r\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the child is gone: its memory went with it, which the samples show

    def stop(self) -> None:
        """Close the child's input (it exits and frees its memory) and reap it."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

