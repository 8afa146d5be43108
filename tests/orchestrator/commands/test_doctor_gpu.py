"""doctor's GPU checks on readings recorded on an H100 (the attribution test needs torch or cupy: skipped here)."""

from __future__ import annotations

import importlib.util

import pytest
from nvml_support import ReplayNvml, load

from adapters.server.nvml import NvmlReader
from orchestrator.commands.doctor_gpu import gpu_checks


def test_the_gpus_and_driver_are_named() -> None:
    """The GPU line names the device, its UUID, memory, power limit, MIG mode, the driver and CUDA version."""
    nv = ReplayNvml(load("h100-plain.json"))
    checks = gpu_checks(NvmlReader(nv, clock=nv.clock))
    gpu = checks[0]
    assert gpu.ok and gpu.detail.startswith("1 GPU(s): 0: NVIDIA H100 80GB HBM3 (GPU-32fe8bdc-")
    assert gpu.detail.endswith("80 GiB, power limit 700.0 W, MIG disabled); driver 580.159.04, CUDA 13.0")
    assert checks[1].name == "gpu processes"


@pytest.mark.skipif(any(importlib.util.find_spec(n) for n in ("torch", "cupy")), reason="a GPU library is here")
def test_attribution_without_a_gpu_library_says_it_was_not_tested() -> None:
    """Without torch or cupy no test process can hold GPU memory: not tested, and why."""
    nv = ReplayNvml(load("h100-plain.json"))
    [_, processes] = gpu_checks(NvmlReader(nv, clock=nv.clock))
    assert not processes.ok and processes.detail.startswith("not tested: neither torch nor cupy is installed")


def test_without_nvml_the_reason_is_given() -> None:
    """A library whose init fails: one informational line with NVML's reason."""
    class Broken(ReplayNvml):
        def nvmlInit(self) -> None:
            raise self.NVMLError(9)

    [gpu] = gpu_checks(NvmlReader(Broken(load("h100-plain.json"))))
    assert not gpu.ok and gpu.detail == "NVML unavailable (NVMLError: NVML error 9)"
