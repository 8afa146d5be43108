"""The psutil/NVML tree sampler on real processes (GPU checks run only where NVML sees a GPU)."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from adapters.server.sampler import PsutilSampler

# A parent that starts two children: one busy on CPU, one idle; prints the children's pids.
_TREE = r"""
import subprocess, sys, time
busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(busy.pid, idle.pid, flush=True)
time.sleep(60)
"""
_NESTED = r"""
import subprocess, sys, time
code = (
    "import subprocess, sys, threading, time\n"
    "box = []\n"
    "t = threading.Thread(target=lambda: box.append(subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])))\n"
    "t.start(); t.join()\n"
    "print(box[0].pid, flush=True)\n"
    "time.sleep(60)\n"
)
child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
print(child.pid, child.stdout.readline().strip(), flush=True)
time.sleep(60)
"""
_GPU_HOLDER = r"""
import sys, time, torch
x = torch.empty(int(sys.argv[1]) * 2**20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("held", flush=True)
time.sleep(120)
"""


def _nvml_gpu_count() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0


HAS_GPU = _nvml_gpu_count() > 0


def _kill_tree(proc: subprocess.Popen) -> None:
    for kid in psutil.Process(proc.pid).children(recursive=True):
        kid.kill()
    proc.kill()
    proc.wait()
    psutil.wait_procs(psutil.Process().children(recursive=True), timeout=5)


class TestTreeSample:
    def test_sums_over_the_tree_and_sees_cpu(self):
        """RSS, threads and fds are summed over root and children; the busy child shows CPU time."""
        proc = subprocess.Popen([sys.executable, "-c", _TREE], stdout=subprocess.PIPE, text=True)
        sampler = PsutilSampler(gpu=False, uss_every=1)
        try:
            busy, idle = map(int, proc.stdout.readline().split())
            first = sampler.sample(proc.pid)
            time.sleep(1.0)
            second = sampler.sample(proc.pid)
            each = sum(psutil.Process(pid).memory_info().rss for pid in (proc.pid, busy, idle))
        finally:
            _kill_tree(proc)
            proc.stdout.close()
        assert first is not None and second is not None
        assert second.children == 2
        assert {pid for pid, _ in second.pids} == {proc.pid, busy, idle}
        assert 0.8 * each < second.rss_bytes < 1.2 * each  # the sum over all three, not the root alone
        assert second.threads >= 3 and second.open_files >= 9
        assert second.uss_bytes is not None and 0 < second.uss_bytes < second.rss_bytes
        # One spinning child: well above an idle tree, even when other work shares the 2 cores.
        assert second.cpu_percent > 5, second.cpu_percent

    def test_grandchild_started_from_a_thread_is_in_the_tree(self):
        """A process started by a non-main thread of a child (kernel lists it under that thread) counts."""
        proc = subprocess.Popen([sys.executable, "-c", _NESTED], stdout=subprocess.PIPE, text=True)
        sampler = PsutilSampler(gpu=False)
        try:
            child, grandchild = map(int, proc.stdout.readline().split())
            sample = sampler.sample(proc.pid)
            expected = {proc.pid, *(p.pid for p in psutil.Process(proc.pid).children(recursive=True))}
        finally:
            _kill_tree(proc)
            proc.stdout.close()
        assert sample is not None
        assert {pid for pid, _ in sample.pids} == expected == {proc.pid, child, grandchild}

    def test_gone_process_gives_none(self):
        """Sampling a pid that has exited returns None instead of raising."""
        proc = subprocess.Popen([sys.executable, "-c", "pass"])
        proc.wait()
        assert PsutilSampler(gpu=False).sample(proc.pid) is None

    @pytest.mark.skipif(HAS_GPU, reason="this machine has a GPU")
    def test_without_gpu_says_why_once(self):
        """Without a GPU the sample has no GPU figures and the sampler says why."""
        sampler = PsutilSampler()
        sample = sampler.sample(psutil.Process().pid)
        assert sample is not None and sample.gpu_memory_bytes is None and sample.gpus == []
        assert sampler.gpu_unavailable.startswith("GPU sampling off: NVML")
        sampler.close()


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="no NVIDIA GPU visible to NVML")
class TestGpuSample:
    def test_gpu_memory_of_a_grandchild_is_counted(self):
        """A grandchild holding 512 MiB of GPU memory shows up in the tree's gpu_memory_bytes."""
        pytest.importorskip("torch")
        wrapper = (f"import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', {_GPU_HOLDER!r}, '512']); "
                   "p.wait()")
        proc = subprocess.Popen([sys.executable, "-c", wrapper], stdout=subprocess.PIPE, text=True)
        sampler = PsutilSampler()
        try:
            deadline = time.monotonic() + 60
            sample = None
            while time.monotonic() < deadline:
                sample = sampler.sample(proc.pid)
                if sample and sample.gpu_memory_bytes and sample.gpu_memory_bytes >= 512 * 2**20:
                    break
                time.sleep(0.5)
        finally:
            _kill_tree(proc)
            proc.stdout.close()
            sampler.close()
        assert sample is not None and sample.gpus, sampler.gpu_unavailable
        holder = [pid for pid, _ in sample.pids if pid != proc.pid]
        print(f"GPU: {sample.gpus[0].name}; tree pids {[p for p, _ in sample.pids]}; holder {holder}; "
              f"tree gpu memory {sample.gpu_memory_bytes / 2**20:.0f} MiB; device used "
              f"{sample.gpus[0].memory_used_bytes / 2**20:.0f} of {sample.gpus[0].memory_total_bytes / 2**20:.0f} MiB")
        assert sample.gpu_memory_bytes >= 512 * 2**20
