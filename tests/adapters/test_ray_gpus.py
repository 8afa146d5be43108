"""A campaign task's sampler reports only the GPUs Ray gave it (CUDA_VISIBLE_DEVICES), never the host's others."""

from __future__ import annotations

import dataclasses

from adapters.ray.gpus import only_visible_gpus, visible_gpus
from adapters.server_kinds import server_parts
from orchestrator.spine.ports import GpuFigures, TreeSample


class _FakeSampler:
    """Two devices, as NVML lists every device of the host."""

    gpu_unavailable = ""

    def __init__(self) -> None:
        self.closed = False

    def sample(self, root_pid: int) -> TreeSample | None:
        gpus = [GpuFigures(index=i, name="H200", memory_used_bytes=i, memory_total_bytes=10, utilization_percent=1.0)
                for i in (0, 1)]
        return TreeSample(pid=root_pid, rss_bytes=1, uss_bytes=None, cpu_percent=0.0, threads=1, open_files=0,
                          children=0, gpu_memory_bytes=None, pids=[], gpus=gpus)

    def close(self) -> None:
        self.closed = True


class TestVisibleGpus:
    def test_indexes_parse_and_uuids_or_empty_mean_no_filter(self) -> None:
        """Plain indexes give a set; an empty value or GPU UUIDs give None (sample every device)."""
        assert visible_gpus("1") == {1} and visible_gpus("0, 2") == {0, 2}
        assert visible_gpus("") is None and visible_gpus("GPU-5d6a1f") is None

    def test_sampler_keeps_only_the_assigned_device(self) -> None:
        """With device 1 assigned, samples carry device 1 alone; closing reaches the real sampler."""
        fake = _FakeSampler()
        base = server_parts("reference")
        wrapped = only_visible_gpus(dataclasses.replace(base, new_sampler=lambda: fake), {1})
        sampler = wrapped.new_sampler()
        sample = sampler.sample(42)
        assert sample is not None and [g.index for g in sample.gpus] == [1] and sample.pid == 42
        sampler.close()
        assert fake.closed
