"""The reference server's GPU worker child (`python -m adapters.reference.gpu_child`): it imports torch, else
cupy, so the server never does, holds the ballast, and keeps or works per request line on its input.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import IO

from adapters.reference.gpu import GpuUnavailable

__all__ = ["main"]


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
    p = argparse.ArgumentParser(prog="python -m adapters.reference.gpu_child", description="The reference server's GPU worker.")
    p.add_argument("--library", choices=("torch", "cupy"), required=True)
    p.add_argument("--ballast-mib", type=float, default=0.0)
    p.add_argument("--leak-mib", type=float, default=0.0)
    p.add_argument("--work-ms", type=float, default=0.0)
    return _child(p.parse_args(argv), sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
