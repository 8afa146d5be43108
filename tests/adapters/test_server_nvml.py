"""The NVML reader on readings recorded on an H100: per-sample figures, identity, and the PID-namespace notice."""

from __future__ import annotations

import pytest
from nvml_support import ReplayNvml, load

from adapters.server.nvml import NvmlReader

pytestmark = pytest.mark.inprocess

# The recorded worker's pid (the plain recording) and a pid as a container sees NVML's host pids.
_WORKER = 589
_HOST_PID = 2931847


def _reader(nv: ReplayNvml, *, visible: set[int], holders: set[int]) -> NvmlReader:
    return NvmlReader(nv, pid_visible=lambda pid: pid in visible, holds_gpu=lambda pid: pid in holders,
                      clock=nv.clock)


class TestFigures:
    def test_utilization_is_the_mean_of_the_samples_since_the_last_read(self):
        """Each read averages NVML's utilisation samples newer than the last read's, not one reading."""
        nv = ReplayNvml(load("h100-plain.json"))
        reader = _reader(nv, visible={1, _WORKER}, holders={_WORKER})
        reads = [reader.read({1, _WORKER}) for _ in range(4)]
        second = reads[1].gpus[0]
        values = [v for _, v in nv.ticks[1]["util_samples"]]
        assert second.utilization_samples == len(values) == 2
        assert second.utilization_mean_percent == pytest.approx(sum(values) / len(values), abs=0.05)
        assert second.utilization_percent == nv.ticks[1]["util_rates"][0]  # the instant reading stays beside it
        # The first read of the 12 s buffer keeps only its last second, not the idle history before the load.
        assert 0 < reads[0].gpus[0].utilization_samples <= 7
        # Each later read asks for samples after the newest one already counted.
        stamps = [since for what, since in nv.calls if what == "samples"]
        assert stamps[2] == max(t for t, _ in nv.ticks[1]["util_samples"])

    def test_power_temperature_clock_reasons_and_process_memory(self):
        """Power (W), temperature, SM clock, named clock event reasons and the tree's own processes."""
        nv = ReplayNvml(load("h100-plain.json"))
        reading = _reader(nv, visible={1, _WORKER}, holders={_WORKER}).read({1, _WORKER})
        gpu = reading.gpus[0]
        tick = nv.ticks[0]
        assert gpu.power_w == pytest.approx(tick["power_mw"] / 1000, abs=0.1)
        assert gpu.temperature_c == tick["temp_c"] and gpu.sm_clock_mhz == tick["sm_mhz"]
        assert gpu.throttle_reasons == ["sw_power_cap"]  # bit 0x4, as the H100 read under load
        assert [(p.pid, p.in_tree) for p in gpu.processes] == [(_WORKER, True)]
        assert reading.tree_bytes == gpu.tree_memory_bytes == tick["procs"][0][1]
        assert reading.scope == "tree" and reading.notice == ""

    def test_identity_as_the_owners_record_it(self):
        """Name, UUID, driver and CUDA versions, clocks, power limit, MIG mode, bus id."""
        nv = ReplayNvml(load("h100-plain.json"))
        reading = _reader(nv, visible=set(), holders=set()).read({1})
        [ident] = reading.identities
        assert (ident.name, ident.driver_version, ident.cuda_version) == ("NVIDIA H100 80GB HBM3", "580.159.04", "13.0")
        assert ident.uuid.startswith("GPU-") and ident.pci_bus_id == "00000000:00:06.0"
        assert (ident.max_sm_clock_mhz, ident.max_memory_clock_mhz, ident.power_limit_w) == (1980, 2619, 700.0)
        assert ident.mig_mode == "disabled" and ident.memory_total_bytes > 80 * 10**9


class TestPidNamespace:
    def test_host_pids_with_a_tree_holding_the_gpu_give_the_notice_and_device_memory(self):
        """NVML's pids are not in our namespace while the tree holds /dev/nvidia0: a notice and device-wide
        memory, never a silent 0."""
        nv = ReplayNvml(load("h100-plain.json", pid_map={_WORKER: _HOST_PID}))
        reader = _reader(nv, visible={1, 3}, holders={3})  # the worker is pid 3 in its namespace
        reading = reader.read({1, 3})
        assert reading.scope == "device"
        assert reading.notice.startswith("per-process GPU memory unavailable: PID namespace")
        assert f"{_HOST_PID}" in reading.notice and "server pid 3 holds a GPU open" in reading.notice
        assert reading.tree_bytes == nv.ticks[0]["mem"][0] > 0
        assert reading.gpus[0].tree_memory_bytes == 0  # the per-process figure is not presented as the tree's

    def test_other_users_processes_without_a_gpu_holder_in_the_tree_are_no_namespace(self):
        """A tree that holds no GPU open uses none: another namespace's process on the GPU is not ours."""
        nv = ReplayNvml(load("h100-plain.json", pid_map={_WORKER: _HOST_PID}))
        reading = _reader(nv, visible={1}, holders=set()).read({1})
        assert (reading.scope, reading.notice, reading.tree_bytes) == ("tree", "", 0)

    def test_a_namespace_whose_driver_translates_pids_attributes_per_process(self):
        """Recorded under `unshare --pid` on the H100: driver 580 gave the worker's pid as the namespace sees it
        (3), so per-process attribution holds there and no notice is given."""
        nv = ReplayNvml(load("h100-unshare-pidns.json"))
        reading = _reader(nv, visible={1, 3}, holders={3}).read({1, 3})
        assert reading.scope == "tree" and reading.notice == ""
        assert reading.tree_bytes == nv.ticks[0]["procs"][0][1]


class TestWithoutNvml:
    def test_init_failure_is_kept_as_the_reason(self):
        """A library whose init fails gives no figures and says why, once."""
        class Broken(ReplayNvml):
            def nvmlInit(self) -> None:
                raise self.NVMLError(9)

        reader = NvmlReader(Broken(load("h100-plain.json")))
        assert reader.read({1}).tree_bytes is None
        assert reader.reason == "GPU sampling off: NVML unavailable (NVMLError: NVML error 9)"
