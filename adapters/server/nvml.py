"""NVML readings of the GPUs a server's process tree uses: per-sample figures, identity, and whose memory it is.
Blocking (NVML calls, /proc reads): the sampler calls it from its worker thread. `lib` is pynvml, or a stand-in
with its names (tests replay recorded readings); nothing here publishes."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from orchestrator.events import GpuIdentity, GpuProcessMemory
from orchestrator.spine.ports import GpuFigures

__all__ = ["GpuReading", "NvmlReader", "THROTTLE_REASONS", "holds_gpu_device", "pid_in_namespace"]

# NVML's clock event (throttle) reason bits, named as the journal writes them.
THROTTLE_REASONS = (
    (0x1, "gpu_idle"), (0x2, "applications_clocks"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
    (0x10, "sync_boost"), (0x20, "sw_thermal"), (0x40, "hw_thermal"), (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
)
_DEVICE_NODE = re.compile(r"/dev/nvidia\d+$")
# The first read of NVML's utilisation buffer returns its whole history (about 12 s): keep only this much.
_FIRST_WINDOW_US = 1_000_000


class GpuReading(msgspec.Struct, frozen=True, kw_only=True):
    """One read over every GPU: the tree's GPU memory (None without NVML), what it covers, each device."""

    tree_bytes: int | None = None
    scope: str = "tree"
    notice: str = ""
    gpus: list[GpuFigures] = []
    identities: list[GpuIdentity] = []


def pid_in_namespace(pid: int) -> bool:
    """Whether `pid` names a process in this PID namespace."""
    return os.path.exists(f"/proc/{pid}")


def holds_gpu_device(pid: int) -> bool:
    """Whether process `pid` holds a GPU device node (/dev/nvidiaN) open: it has a CUDA context."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if _DEVICE_NODE.match(os.readlink(f"/proc/{pid}/fd/{fd}")):
                return True
        except OSError:
            continue
    return False


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class NvmlReader:
    """NVML, initialised on first use; an init failure disables it for good with the reason kept.

    `lib`: pynvml (imported on first use when None) or a stand-in. `pid_visible` and `holds_gpu` are the two
    facts the PID-namespace check reads from /proc (stand-ins in tests)."""

    def __init__(self, lib: Any = None, *, pid_visible: Callable[[int], bool] = pid_in_namespace,  # noqa: ANN401 - pynvml is untyped
                 holds_gpu: Callable[[int], bool] = holds_gpu_device, clock: Callable[[], float] = time.time) -> None:
        self.reason = ""
        self._lib: Any = lib  # pynvml, untyped
        self._ready = False
        self._pid_visible = pid_visible
        self._holds_gpu = holds_gpu
        self._clock = clock
        self._handles: list[Any] = []  # NVML device handles, untyped
        self._identities: list[GpuIdentity] = []
        self._last_util_us: dict[int, int] = {}

    def _init(self) -> bool:
        if self._ready:
            return True
        if self.reason:
            return False
        try:
            if self._lib is None:
                import pynvml  # nvidia-ml-py; imported lazily so machines without it still sample psutil figures

                self._lib = pynvml
            nv = self._lib
            nv.nvmlInit()
            self._handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
            self._identities = [self._identity(i, h) for i, h in enumerate(self._handles)]
        except Exception as exc:  # ImportError, NVMLError (no driver / no device): both mean "no GPU figures"
            self.reason = f"GPU sampling off: NVML unavailable ({type(exc).__name__}: {exc})"
            return False
        if not self._handles:
            self.reason = "GPU sampling off: NVML found no GPU"
            return False
        self._ready = True
        return True

    def _optional(self, call: Callable[..., Any], *args: Any) -> Any:  # noqa: ANN401 - NVML's values are untyped
        """One NVML call whose failure (unsupported on this device, or not permitted) leaves its figure None."""
        try:
            return call(*args)
        except self._lib.NVMLError:
            return None

    def _identity(self, index: int, h: Any) -> GpuIdentity:  # noqa: ANN401 - an NVML handle
        nv, opt = self._lib, self._optional
        cuda = opt(nv.nvmlSystemGetCudaDriverVersion_v2)
        mig = opt(nv.nvmlDeviceGetMigMode, h)
        power = opt(nv.nvmlDeviceGetEnforcedPowerLimit, h)
        pci = opt(nv.nvmlDeviceGetPciInfo, h)
        mem = nv.nvmlDeviceGetMemoryInfo(h)
        return GpuIdentity(
            index=index, name=_text(nv.nvmlDeviceGetName(h)), uuid=_text(opt(nv.nvmlDeviceGetUUID, h) or ""),
            driver_version=_text(opt(nv.nvmlSystemGetDriverVersion) or ""),
            cuda_version=f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else "",
            memory_total_bytes=int(mem.total),
            max_sm_clock_mhz=opt(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
            max_memory_clock_mhz=opt(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
            power_limit_w=power / 1000.0 if power is not None else None,
            mig_mode=("enabled" if mig[0] else "disabled") if mig else "",
            pci_bus_id=_text(pci.busId) if pci is not None else "",
        )

    @property
    def identities(self) -> list[GpuIdentity]:
        return list(self._identities)

    def _utilization_mean(self, index: int, h: Any) -> tuple[float | None, int]:  # noqa: ANN401 - an NVML handle
        """The mean of NVML's utilisation samples since the last read (the first read: its last second)."""
        nv = self._lib
        last = self._last_util_us.get(index)
        try:
            _kind, samples = nv.nvmlDeviceGetSamples(h, nv.NVML_GPU_UTILIZATION_SAMPLES, last or 0)
        except nv.NVMLError:
            return None, 0  # NOT_FOUND (no sample since `last`) or a device that keeps none
        stamps = [(int(s.timeStamp), int(s.sampleValue.uiVal)) for s in samples]
        if last is None:
            stamps = [(t, v) for t, v in stamps if t >= int(self._clock() * 1e6) - _FIRST_WINDOW_US] or stamps[-1:]
        else:
            stamps = [(t, v) for t, v in stamps if t > last]
        if not stamps:
            return None, 0
        self._last_util_us[index] = max(t for t, _ in stamps)
        return round(sum(v for _, v in stamps) / len(stamps), 1), len(stamps)

    def _device(self, index: int, h: Any, pids: set[int]) -> tuple[GpuFigures, list[int]]:  # noqa: ANN401 - handle
        """One device's figures, and the pids NVML lists there that are not in this namespace."""
        nv, opt = self._lib, self._optional
        procs = nv.nvmlDeviceGetComputeRunningProcesses(h)
        mem = nv.nvmlDeviceGetMemoryInfo(h)
        util = nv.nvmlDeviceGetUtilizationRates(h)
        mean, count = self._utilization_mean(index, h)
        reasons = opt(nv.nvmlDeviceGetCurrentClocksEventReasons, h)
        power = opt(nv.nvmlDeviceGetPowerUsage, h)
        listed = [GpuProcessMemory(pid=int(p.pid), memory_bytes=int(p.usedGpuMemory or 0), in_tree=int(p.pid) in pids)
                  for p in procs]
        foreign = [p.pid for p in listed if not p.in_tree and not self._pid_visible(p.pid)]
        figures = GpuFigures(
            index=index, name=self._identities[index].name, memory_used_bytes=int(mem.used),
            memory_total_bytes=int(mem.total), utilization_percent=float(util.gpu),
            utilization_mean_percent=mean, utilization_samples=count,
            power_w=round(power / 1000.0, 1) if power is not None else None,
            temperature_c=opt(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
            sm_clock_mhz=opt(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
            throttle_reasons=[name for bit, name in THROTTLE_REASONS if reasons is not None and reasons & bit],
            processes=listed, tree_memory_bytes=sum(p.memory_bytes for p in listed if p.in_tree),
        )
        return figures, foreign

    def read(self, pids: Iterable[int]) -> GpuReading:
        """Every GPU's figures and the tree's GPU memory. Where NVML lists processes of another PID namespace
        and finds none of the tree while one of its processes holds a GPU open, the tree's figure is the
        device-wide memory of every GPU, with a notice saying why (never a silent 0)."""
        if not self._init():
            return GpuReading()
        tree = set(pids)
        gpus: list[GpuFigures] = []
        foreign: list[int] = []
        for index, handle in enumerate(self._handles):
            try:
                figures, others = self._device(index, handle, tree)
            except self._lib.NVMLError:
                continue  # a device that stopped answering this once: the others still count
            gpus.append(figures)
            foreign += others
        tree_bytes = sum(g.tree_memory_bytes or 0 for g in gpus)
        seen = any(p.in_tree for g in gpus for p in g.processes)
        if not seen and foreign and (holder := next((pid for pid in sorted(tree) if self._holds_gpu(pid)), None)):
            notice = (f"per-process GPU memory unavailable: PID namespace (NVML lists pid(s) "
                      f"{', '.join(map(str, sorted(set(foreign))[:5]))}, none of them in this PID namespace, while "
                      f"server pid {holder} holds a GPU open); GPU memory is judged device-wide, every process on "
                      f"the GPU counted")
            return GpuReading(tree_bytes=sum(g.memory_used_bytes for g in gpus), scope="device", notice=notice,
                              gpus=gpus, identities=self.identities)
        return GpuReading(tree_bytes=tree_bytes, gpus=gpus, identities=self.identities)

    def close(self) -> None:
        if self._ready:
            try:
                self._lib.nvmlShutdown()
            except Exception:  # shutting down a library that already failed: nothing to report
                pass
            self._ready = False
