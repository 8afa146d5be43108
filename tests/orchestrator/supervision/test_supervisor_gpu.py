"""GPU figures through the whole supervisor: a server holding GPU memory (only where a GPU exists)."""

from __future__ import annotations

import importlib.util

import anyio
import pytest
from supervisor_support import drain, kinds, make_spec, new_bus

from orchestrator.supervision.supervisor import supervised

try:
    import pynvml

    pynvml.nvmlInit()
    HAS_GPU = pynvml.nvmlDeviceGetCount() > 0
    pynvml.nvmlShutdown()
except Exception:
    HAS_GPU = False

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.gpu,
    pytest.mark.skipif(not HAS_GPU or importlib.util.find_spec("torch") is None,
                       reason="needs an NVIDIA GPU and torch"),
]


async def test_server_gpu_memory_is_sampled(tmp_path):
    """ResourceSampled carries the server's GPU memory (>= its 256 MiB tensor) and GpuSampled the device."""
    bus, sub = new_bus()
    spec = make_spec(tmp_path, "--gpu-mib", "256", startup_timeout_s=120.0)
    async with supervised(spec, bus) as handle:
        await anyio.sleep(1.0)
        pid = handle.pid
    events = drain(sub)
    gpu = [e.gpu_memory_bytes for e in kinds(events, "ResourceSampled") if e.gpu_memory_bytes]
    devices = kinds(events, "GpuSampled")
    print(f"server pid {pid}: peak tree GPU memory {max(gpu or [0]) / 2**20:.0f} MiB; "
          f"{devices[-1].name if devices else '-'} used {devices[-1].memory_used_bytes / 2**20 if devices else 0:.0f} MiB")
    assert gpu and max(gpu) >= 256 * 2**20
    assert devices and devices[-1].memory_total_bytes > 0
    assert not [w for w in kinds(events, "Warned") if w.code == "gpu_sampling_unavailable"]
