"""doctor's GPU checks: the GPUs and driver NVML reports, and whether NVML sees this PID namespace's processes.
Composition root (imports adapters). Starts one short-lived GPU worker (64 MiB through torch or cupy) to see
whether NVML attributes its memory to its pid; nothing else is touched."""

from __future__ import annotations

from typing import NamedTuple

from adapters.reference.gpu import GpuSettings, GpuUnavailable, GpuWorker, gpu_library
from adapters.server.nvml import NvmlReader

__all__ = ["GpuCheck", "gpu_checks"]

_PROBE_MIB = 64.0


class GpuCheck(NamedTuple):
    name: str
    ok: bool
    detail: str
    fix: str = ""


def gpu_checks(reader: NvmlReader | None = None) -> list[GpuCheck]:
    """`gpu`: each GPU's identity and the driver; `gpu processes`: whether NVML names a process of ours by its
    pid here (it does not inside a PID namespace whose pids the driver does not translate). Blocks (up to 2 min
    for the worker's start)."""
    reader = reader or NvmlReader()
    try:
        reading = reader.read(set())
        if reader.reason:
            return [GpuCheck("gpu", False, reader.reason.removeprefix("GPU sampling off: "),
                             "only needed for GPU figures and GPU memory verdicts; install the NVIDIA driver and "
                             "nvidia-ml-py to get them")]
        ids = reading.identities
        first = ids[0]
        gpus = "; ".join(f"{g.index}: {g.name} ({g.uuid}, {g.memory_total_bytes / 2**30:.0f} GiB, power limit "
                         f"{g.power_limit_w or '?'} W, MIG {g.mig_mode or 'n/a'})" for g in ids)
        out = [GpuCheck("gpu", True, f"{len(ids)} GPU(s): {gpus}; driver {first.driver_version}, CUDA "
                                     f"{first.cuda_version or '?'}")]
        return out + [_attribution(reader)]
    finally:
        reader.close()


def _attribution(reader: NvmlReader) -> GpuCheck:
    if not gpu_library():
        return GpuCheck("gpu processes", False, "not tested: neither torch nor cupy is installed to hold GPU memory "
                        "in a test process", "install torch or cupy to test it; without it the soak still says "
                        "so in a notice if NVML's pids are not this namespace's")
    worker = GpuWorker(GpuSettings(ballast_mib=_PROBE_MIB))
    try:
        worker.start()
        reading = reader.read({worker.pid} if worker.pid else set())
    except GpuUnavailable as exc:
        return GpuCheck("gpu processes", False, f"not tested: the test worker could not hold GPU memory: {exc}",
                        "see the worker's reason above")
    finally:
        worker.stop()
    if reading.scope == "device":
        return GpuCheck("gpu processes", False, reading.notice,
                        "run aqbench in the host's PID namespace (docker --pid=host) for per-process GPU memory; "
                        "otherwise the soak judges device-wide GPU memory")
    held = reading.tree_bytes or 0
    if not held:
        return GpuCheck("gpu processes", False, f"NVML lists no memory for the test worker (pid {worker.pid}) "
                        f"holding {_PROBE_MIB:g} MiB", "per-process GPU memory will read 0: check NVML's "
                        "permissions (nvidia-smi should list the process)")
    return GpuCheck("gpu processes", True, f"NVML sees this namespace's processes: the test worker (pid "
                    f"{worker.pid}) holds {held / 2**20:.0f} MiB, its {_PROBE_MIB:g} MiB and its CUDA context")
