"""The reference server's GPU worker: a child process that holds device memory as a model server's worker does.
`python -m adapters.reference.gpu` is the child; it imports torch, else cupy, so the server never does.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import IO

__all__ = ["GpuSettings", "GpuUnavailable", "GpuWorker", "gpu_library", "main"]

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
            [sys.executable, "-m", "adapters.reference.gpu", "--library", lib, "--ballast-mib", f"{s.ballast_mib:g}",
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


class _Device:
    """The child's device memory and work, through one library."""

    def __init__(self, library: str) -> None:
        self.kept: list[object] = []
        if library == "torch":
            import torch

            if not torch.cuda.is_available():
                raise GpuUnavailable("no CUDA device: torch.cuda.is_available() is False "
                                     f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')!r})")
            self._torch = torch
            self.name = torch.cuda.get_device_name(0)
            self._a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
        else:
            import cupy

            try:
                count = cupy.cuda.runtime.getDeviceCount()
            except Exception as exc:  # cupy raises its runtime error class where no driver is present
                raise GpuUnavailable(f"no CUDA device: cupy: {exc}") from exc
            if not count:
                raise GpuUnavailable("no CUDA device: cupy sees none")
            self._cupy = cupy
            self.name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
            self._a = cupy.random.standard_normal((2048, 2048), dtype=cupy.float32).astype(cupy.float16)
        self.library = library

    def hold(self, mib: float) -> None:
        n = int(mib * 2**20)
        if n <= 0:
            return
        if self.library == "torch":
            block = self._torch.ones(n, dtype=self._torch.uint8, device="cuda")  # written: pages are real
            self._torch.cuda.synchronize()
        else:
            block = self._cupy.ones(n, dtype=self._cupy.uint8)
            self._cupy.cuda.Device().synchronize()
        self.kept.append(block)

    def work(self, ms: float) -> None:
        end = time.perf_counter() + ms / 1000.0
        while time.perf_counter() < end:
            if self.library == "torch":
                (self._a @ self._a).sum().item()
            else:
                float((self._a @ self._a).sum())


def _child(args: argparse.Namespace, out: IO[str]) -> int:
    try:
        device = _Device(args.library)
        device.hold(args.ballast_mib)
    except GpuUnavailable as exc:
        print(f"error {exc}", file=out, flush=True)
        return 2
    except Exception as exc:  # out of memory, a broken driver: the parent names it and exits 2
        print(f"error {args.library}: {type(exc).__name__}: {exc}", file=out, flush=True)
        return 2
    print(f"ready {device.name} ({args.library}, {args.ballast_mib:g} MiB held)", file=out, flush=True)
    for line in sys.stdin:  # one line per chat request; EOF when the server stops
        if line.strip():
            device.hold(args.leak_mib)
            if args.work_ms:
                device.work(args.work_ms)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m adapters.reference.gpu", description="The reference server's GPU worker.")
    p.add_argument("--library", choices=("torch", "cupy"), required=True)
    p.add_argument("--ballast-mib", type=float, default=0.0)
    p.add_argument("--leak-mib", type=float, default=0.0)
    p.add_argument("--work-ms", type=float, default=0.0)
    return _child(p.parse_args(argv), sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
