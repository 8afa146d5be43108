"""Resource samples of a server's whole process tree (psutil) and its GPU use (NVML, when present).
Blocking calls: run `sample` in a worker thread. Publishes nothing; the supervisor turns samples into
events. Without a GPU (or without nvidia-ml-py) GPU figures are None and `gpu_unavailable` says why."""

from __future__ import annotations

import os

import psutil

from adapters.server.nvml import GpuReading, NvmlReader
from orchestrator.spine.ports import TreeSample

__all__ = ["PsutilSampler"]


def _descendants(root_pid: int) -> list[int] | None:
    """The pids under `root_pid`, from each thread's /proc children list (Linux CONFIG_PROC_CHILDREN):
    reads the tree's own files, where psutil reads the stat of every process on the host. None where
    the kernel has no such lists."""
    out: list[int] = []
    stack = [root_pid]
    while stack:
        pid = stack.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except FileNotFoundError:
            continue  # exited since its parent listed it
        except OSError:
            return None
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except FileNotFoundError:
                if not os.path.isdir(f"/proc/{pid}/task/{tid}"):
                    continue  # the thread ended
                return None
            except OSError:
                return None
            out += kids
            stack += kids
    return out


class PsutilSampler:
    """ResourceSampler over the tree under a root pid. Keeps psutil.Process objects between samples
    (cpu_percent needs the previous reading). `uss` every `uss_every`-th sample: it reads smaps."""

    def __init__(self, *, gpu: bool = True, uss_every: int = 10, nvml: NvmlReader | None = None) -> None:
        self._procs: dict[int, psutil.Process] = {}
        # `nvml`: a reader over a stand-in library (recorded readings in tests); by default pynvml's.
        self._nvml = (nvml or NvmlReader()) if gpu else None
        self._uss_every = max(1, uss_every)
        self._count = 0
        self._last_uss: int | None = None

    @property
    def gpu_unavailable(self) -> str:
        if self._nvml is None:
            return "GPU sampling off: disabled"
        return self._nvml.reason

    def _process(self, pid: int) -> psutil.Process:
        proc = self._procs.get(pid)
        if proc is None:
            proc = self._procs[pid] = psutil.Process(pid)
            proc.cpu_percent(None)  # primes the counter; the first reading of a new process is 0
        return proc

    def sample(self, root_pid: int) -> TreeSample | None:
        try:
            root = self._process(root_pid)
            below = _descendants(root_pid)
            if below is None:
                below = [child.pid for child in root.children(recursive=True)]
        except psutil.Error:
            return None
        self._count += 1
        want_uss = self._count % self._uss_every == 1 or self._uss_every == 1
        rss = threads = fds = 0
        uss: int | None = 0 if want_uss else None
        cpu = 0.0
        pids: list[tuple[int, float]] = []
        for member in (root_pid, *below):
            try:
                proc = self._process(member)
                with proc.oneshot():
                    if proc.status() == psutil.STATUS_ZOMBIE:
                        continue
                    rss += proc.memory_info().rss
                    cpu += proc.cpu_percent(None)
                    threads += proc.num_threads()
                    fds += proc.num_fds()
                    pids.append((proc.pid, proc.create_time()))
                    if uss is not None:
                        try:
                            uss += proc.memory_full_info().uss
                        except psutil.AccessDenied:
                            uss = None
            except psutil.Error:
                continue  # exited between listing and reading
        if not pids or pids[0][0] != root_pid:
            return None
        live = {pid for pid, _ in pids}
        for gone in [pid for pid in self._procs if pid not in live]:
            del self._procs[gone]
        if uss is not None:
            self._last_uss = uss
        gpu = self._nvml.read(live) if self._nvml else GpuReading()
        return TreeSample(
            pid=root_pid, rss_bytes=rss, uss_bytes=uss if uss is not None else self._last_uss,
            cpu_percent=round(cpu, 2), threads=threads, open_files=fds, children=len(pids) - 1,
            gpu_memory_bytes=gpu.tree_bytes, pids=pids, gpus=gpu.gpus, gpu_memory_scope=gpu.scope,
            gpu_notice=gpu.notice, gpu_identities=gpu.identities,
        )

    def close(self) -> None:
        if self._nvml is not None:
            self._nvml.close()
