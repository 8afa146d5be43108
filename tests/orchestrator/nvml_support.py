"""A stand-in for pynvml that replays NVML readings recorded on a GPU host (tests/data/nvml/*.json).

A recording holds the device's identity and one tick per read: utilisation samples, compute processes,
memory, power, temperature, SM clock, clock event reasons (bench/gpu_record_nvml.py wrote them on an H100).
Each `nvmlDeviceGetComputeRunningProcesses` call moves to the next tick, as one sampler read does.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data" / "nvml"


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


def load(name: str, *, pid_map: dict[int, int] | None = None) -> dict[str, Any]:
    """A recording; `pid_map` rewrites the pids NVML listed (a container's view of host pids)."""
    data = json.loads((DATA / name).read_text())
    for tick in data["ticks"]:
        tick["procs"] = [[(pid_map or {}).get(pid, pid), used] for pid, used in tick["procs"]]
    return data


class ReplayNvml:
    """pynvml's names used by adapters/server/nvml.py, answering from one recording (one device)."""

    NVMLError = NVMLError
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0
    NVML_GPU_UTILIZATION_SAMPLES = 1

    def __init__(self, recording: dict[str, Any]) -> None:
        self.identity = recording["identity"]
        self.ticks = recording["ticks"]
        self.tick = -1
        self.calls: list[tuple[str, Any]] = []

    @property
    def now(self) -> dict[str, Any]:
        return self.ticks[max(0, min(self.tick, len(self.ticks) - 1))]

    def clock(self) -> float:
        """Wall time of the current tick (the reader's first utilisation window is measured from it)."""
        return float(self.now["t"])

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return self.identity["name"].encode()

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self.identity["uuid"]

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.identity["driver"]

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return int(self.identity["cuda"])

    def nvmlDeviceGetMaxClockInfo(self, h: int, kind: int) -> int:
        return int(self.identity["max_sm_mhz" if kind == self.NVML_CLOCK_SM else "max_mem_mhz"])

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return int(self.identity["power_limit_mw"])

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        return list(self.identity["mig"])

    def nvmlDeviceGetPciInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(busId=self.identity["pci"].encode())

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[SimpleNamespace]:
        self.tick += 1
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in self.now["procs"]]

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        used, total = self.now["mem"] if self.tick >= 0 else self.ticks[0]["mem"]
        return SimpleNamespace(used=used, total=total)

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:
        gpu, memory = self.now["util_rates"]
        return SimpleNamespace(gpu=gpu, memory=memory)

    def nvmlDeviceGetSamples(self, h: int, kind: int, since: int) -> tuple[int, list[SimpleNamespace]]:
        self.calls.append(("samples", since))
        got = [SimpleNamespace(timeStamp=t, sampleValue=SimpleNamespace(uiVal=v))
               for t, v in self.now["util_samples"] if t > since]
        if not got:
            raise NVMLError(6)  # NVML_ERROR_NOT_FOUND, as NVML answers when no sample is newer
        return 0, got

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return int(self.now["power_mw"])

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return int(self.now["temp_c"])

    def nvmlDeviceGetClockInfo(self, h: int, kind: int) -> int:
        return int(self.now["sm_mhz"])

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return int(self.now["reasons"])
