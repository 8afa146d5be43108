"""The soak's GPU memory: its plan line, its verdict on a leak and on a ballast, and the PID-namespace series."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator.events import ResourceSampled, SampledMemoryDetail, SoakLimits
from orchestrator.soak.evidence import EvidenceCollector
from orchestrator.soak.plan import plan_trends
from orchestrator.soak.samples import SampleSeries
from orchestrator.soak.verdicts import SoakEvidence, judge_soak

T0 = 1_800_000_000 * 10**9
MIB = 2**20


def _gpu_series(seconds: int, *, ballast_mib: float, leak_mib_per_s: float, seed: int) -> SampleSeries:
    """GPU memory as NVML gives it for a worker holding a ballast: flat (NVML counts exactly) but for a
    request's transient workspace caught by one sample in twenty, plus a leak."""
    rng = np.random.default_rng(seed)
    series = SampleSeries()
    level = ballast_mib + 500.0  # the CUDA context
    for s in range(seconds):
        transient = 8.0 if rng.random() < 0.05 else 0.0
        series.add(T0 + s * 10**9, level + transient + leak_mib_per_s * s)
    return series


class TestPlan:
    def test_the_plan_states_the_detectable_gpu_growth_as_for_rss(self) -> None:
        """With a GPU, server_gpu_memory is planned by the same rule as server_rss: the same detectable slope."""
        plans = {p.metric: p for p in plan_trends(3600.0, SoakLimits(), 300.0, gpu=True)}
        gpu, rss = plans["server_gpu_memory"], plans["server_rss"]
        assert gpu.detectable_slope == rss.detectable_slope is not None and gpu.slope_decides
        assert gpu.text.startswith("server_gpu_memory: judges 59.0 min after a 60 s warmup")
        assert "device-wide, with a notice, where a PID namespace hides them" in gpu.text
        assert "server_gpu_memory" not in {p.metric for p in plan_trends(3600.0, SoakLimits(), 300.0)}


class TestVerdict:
    def test_a_gpu_leak_fails_with_its_growth(self) -> None:
        """A worker keeping 1 MiB a second over a 4-minute soak FAILs server_gpu_memory on its growth."""
        samples = {"server_gpu_memory": _gpu_series(240, ballast_mib=1024, leak_mib_per_s=1.0, seed=1)}
        verdicts = judge_soak(SoakEvidence(windows=[], samples=samples,
                                           load_span_ns=(T0, T0 + 240 * 10**9)), SoakLimits())
        [gpu] = [v for v in verdicts if v.metric == "server_gpu_memory"]
        assert gpu.outcome == "fail", gpu.reason
        assert isinstance(gpu.detail, SampledMemoryDetail) and gpu.detail.growth_mib is not None
        assert 150 < gpu.detail.growth_mib < 190  # 180 judged seconds at 1 MiB/s
        assert "GPU memory of the server's processes" in gpu.detail.source

    def test_a_ballast_alone_is_not_a_leak(self) -> None:
        """A ballast held from the start passes over an hour, and over 4 minutes is inconclusive, never FAIL."""
        hour = judge_soak(SoakEvidence(windows=[], load_span_ns=(T0, T0 + 3600 * 10**9),
                                       samples={"server_gpu_memory": _gpu_series(3600, ballast_mib=1024, leak_mib_per_s=0, seed=2)}), SoakLimits())
        short = judge_soak(SoakEvidence(windows=[], load_span_ns=(T0, T0 + 240 * 10**9),
                                        samples={"server_gpu_memory": _gpu_series(240, ballast_mib=1024, leak_mib_per_s=0, seed=3)}), SoakLimits())
        assert next(v for v in hour if v.metric == "server_gpu_memory").outcome == "pass"
        assert next(v for v in short if v.metric == "server_gpu_memory").outcome == "inconclusive"

    def test_device_wide_memory_is_its_own_verdict_with_its_caveat(self) -> None:
        """In a PID namespace the samples are device-wide: device_gpu_memory, whose source says so."""
        samples = {"device_gpu_memory": _gpu_series(240, ballast_mib=1024, leak_mib_per_s=1.0, seed=4)}
        verdicts = judge_soak(SoakEvidence(windows=[], samples=samples,
                                           load_span_ns=(T0, T0 + 240 * 10**9)), SoakLimits())
        assert "server_gpu_memory" not in {v.metric for v in verdicts}
        [device] = [v for v in verdicts if v.metric == "device_gpu_memory"]
        assert device.outcome == "fail" and "PID namespace" in device.detail.source  # type: ignore[union-attr]


class TestTracker:
    def test_device_scope_samples_go_to_the_device_series(self) -> None:
        """A ResourceSampled whose GPU memory is device-wide feeds device_gpu_memory, not the tree's series."""
        tracker = EvidenceCollector(None)  # type: ignore[arg-type]
        for s, scope in enumerate(("tree", "device", "device")):
            tracker.observe(ResourceSampled(incarnation=1, pid=5, rss_bytes=MIB, gpu_memory_bytes=(s + 1) * MIB,
                                            gpu_memory_scope=scope, ts_ns=T0 + s * 10**9))
        assert tracker.samples["server_gpu_memory"].samples == 1
        assert tracker.samples["device_gpu_memory"].samples == 2
        assert pytest.approx(tracker.samples["device_gpu_memory"].between(T0, T0 + 10 * 10**9)[1]) == [2.5]
