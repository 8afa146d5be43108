"""Record raw NVML readings while a child holds GPU memory and runs bursts of matrix products (GPU host only).

Writes the recordings tests/data/nvml/*.json hold, which tests/orchestrator/nvml_support.py replays:
`python3 bench/gpu_record_nvml.py OUT.json` (and under `unshare --pid --fork --mount-proc` for a PID namespace).
Needs torch and nvidia-ml-py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pynvml as nv

# 512 MiB held, then 256 MiB more per tick (six times); 150 ms of matrix products, then 150 ms idle.
_WORKER = r'''
import time, torch
x = torch.empty(512 * 2**20, dtype=torch.uint8, device="cuda")
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
print("ready", flush=True)
extra = []
t0 = time.time()
while time.time() - t0 < 30:
    t = time.time()
    while time.time() - t < 0.15:
        (a @ a).sum().item()
    time.sleep(0.15)
    if len(extra) < 6:
        extra.append(torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda"))
'''
_TICKS = 12
_TICK_S = 0.5


def _text(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else v


def _safe(f: Callable[..., Any], *a: Any) -> Any:  # noqa: ANN401 - NVML's values are untyped
    try:
        return f(*a)
    except Exception as e:  # recorded as the error, as a stand-in can replay it
        return f"ERR {type(e).__name__}: {e}"


def _identity(h: Any) -> dict[str, Any]:  # noqa: ANN401 - an NVML handle
    return {
        "name": _text(nv.nvmlDeviceGetName(h)), "uuid": _text(nv.nvmlDeviceGetUUID(h)),
        "driver": _text(nv.nvmlSystemGetDriverVersion()), "cuda": _safe(nv.nvmlSystemGetCudaDriverVersion_v2),
        "max_sm_mhz": _safe(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
        "max_mem_mhz": _safe(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
        "power_limit_mw": _safe(nv.nvmlDeviceGetEnforcedPowerLimit, h),
        "mig": _safe(nv.nvmlDeviceGetMigMode, h), "pci": _safe(lambda: _text(nv.nvmlDeviceGetPciInfo(h).busId)),
        "count": nv.nvmlDeviceGetCount(),
    }


def _device_nodes(pid: int) -> list[str]:
    out = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("/dev/nvidia"):
                out.append(target)
    except OSError as e:
        out.append(f"ERR {e}")
    return sorted(set(out))


def _tick(h: Any, worker: int, last: int, last_proc: int) -> tuple[dict[str, Any], int, int]:  # noqa: ANN401
    s = _safe(nv.nvmlDeviceGetSamples, h, nv.NVML_GPU_UTILIZATION_SAMPLES, last)
    samples = [] if isinstance(s, str) else [[x.timeStamp, x.sampleValue.uiVal] for x in s[1]]
    pu = _safe(nv.nvmlDeviceGetProcessUtilization, h, last_proc)
    putil = [] if isinstance(pu, str) else [[p.pid, p.timeStamp, p.smUtil, p.memUtil] for p in pu]
    procs = _safe(nv.nvmlDeviceGetComputeRunningProcesses, h)
    mem = nv.nvmlDeviceGetMemoryInfo(h)
    u = nv.nvmlDeviceGetUtilizationRates(h)
    tick = {
        "t": time.time(), "util_samples": samples, "util_rates": [u.gpu, u.memory], "proc_util": putil,
        "procs": procs if isinstance(procs, str) else [[p.pid, p.usedGpuMemory] for p in procs],
        "mem": [mem.used, mem.total], "power_mw": _safe(nv.nvmlDeviceGetPowerUsage, h),
        "temp_c": _safe(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
        "sm_mhz": _safe(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
        "reasons": _safe(nv.nvmlDeviceGetCurrentClocksEventReasons, h),
        "worker_pid": worker, "worker_fds": _device_nodes(worker), "own_pid": os.getpid(),
        "worker_pid_visible_in_nvml": not isinstance(procs, str) and any(p.pid == worker for p in procs),
        "nvml_pids_in_our_ns": [] if isinstance(procs, str) else [os.path.exists(f"/proc/{p.pid}") for p in procs],
    }
    return tick, max([last, *(t for t, _ in samples)]), max([last_proc, *(p[1] for p in putil)])


def main(out: str) -> None:
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    ident = _identity(h)
    worker = subprocess.Popen([sys.executable, "-c", _WORKER], stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None
        worker.stdout.readline()
        last = last_proc = 0
        ticks = []
        for _ in range(_TICKS):
            time.sleep(_TICK_S)
            tick, last, last_proc = _tick(h, worker.pid, last, last_proc)
            ticks.append(tick)
    finally:
        worker.kill()
        worker.wait()
    with open(out, "w") as fh:
        json.dump({"identity": ident, "ticks": ticks}, fh, indent=1)
    print("recorded", out, ident)


if __name__ == "__main__":
    main(sys.argv[1])
