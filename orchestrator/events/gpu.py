"""The GPU's identity (as the owners record it) and its processes' memory: payloads and the identity event."""

from __future__ import annotations

import msgspec

from orchestrator.events.base import Event

__all__ = ["GpuIdentity", "GpuProcessMemory", "GpuIdentified"]


class GpuIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU as NVML names it: what TRTMC's qualification writes into `host.gpu`. Empty or None where NVML
    does not say (a field the device does not support)."""

    index: int
    name: str = ""
    uuid: str = ""
    driver_version: str = ""
    cuda_version: str = ""  # the driver's CUDA version ("13.0"), not the toolkit a server was built with
    memory_total_bytes: int = 0
    max_sm_clock_mhz: int | None = None
    max_memory_clock_mhz: int | None = None
    power_limit_w: float | None = None  # the enforced limit
    mig_mode: str = ""  # "enabled", "disabled", or "" where the device has no MIG
    pci_bus_id: str = ""


class GpuProcessMemory(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """One compute process NVML lists on a GPU: its pid as NVML gives it, bytes held, and whether that pid is
    one of the server's tree. Array-like: [pid, bytes, in_tree]."""

    pid: int
    memory_bytes: int
    in_tree: bool = False


class GpuIdentified(Event, frozen=True, kw_only=True):
    """A GPU of the server's host, named once per run (the supervisor, at the first sample NVML answers)."""

    gpu: GpuIdentity
