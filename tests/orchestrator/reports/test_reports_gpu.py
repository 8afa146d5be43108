"""GPU figures folded into the run report and the soak report: identity, per-GPU figures, busy % under load."""

from __future__ import annotations

from orchestrator.events import (
    GpuIdentified,
    GpuIdentity,
    GpuProcessMemory,
    GpuSampled,
    PhaseFinished,
    PhaseStarted,
    ResourceSampled,
    RunStarted,
    Warned,
)
from orchestrator.reports.fold import fold
from orchestrator.reports.markdown import render_markdown
from orchestrator.reports.soak import fold_soak, render_soak_markdown

S = 10**9
T0 = 1_800_000_000 * S
H100 = GpuIdentity(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-32fe8bdc", driver_version="580.159.04",
                   cuda_version="13.0", memory_total_bytes=85 * 10**9, max_sm_clock_mhz=1980, power_limit_w=700.0,
                   mig_mode="disabled")


def _sample(t: int, util: float, *, pre_ready: bool = False) -> list:
    return [ResourceSampled(incarnation=1, pid=5, rss_bytes=2**30, gpu_memory_bytes=2**31, pre_ready=pre_ready,
                            gpu_memory_scope="tree", ts_ns=T0 + t * S),
            GpuSampled(index=0, name=H100.name, memory_used_bytes=2**31 + 2**20, memory_total_bytes=85 * 10**9,
                       utilization_percent=3.0, utilization_mean_percent=util, utilization_samples=6, power_w=300.0 + util,
                       temperature_c=40 + t, sm_clock_mhz=1980 - t, throttle_reasons=["sw_power_cap"] if util else [],
                       processes=[GpuProcessMemory(pid=6, memory_bytes=2**31, in_tree=True)],
                       tree_memory_bytes=2**31, ts_ns=T0 + t * S)]


def _events() -> list:
    out = [RunStarted(run_id="r", command="qualify", ts_ns=T0), PhaseStarted(phase="model", model="m", ts_ns=T0),
           GpuIdentified(gpu=H100, ts_ns=T0)]
    out += _sample(0, 99.0, pre_ready=True)  # start-up: never counted
    out += _sample(1, 0.0)
    out += [PhaseStarted(phase="aiperf", model="m", ts_ns=T0 + 2 * S)]
    out += _sample(2, 60.0) + _sample(3, 40.0)
    out += [PhaseFinished(phase="aiperf", model="m", outcome="passed", ts_ns=T0 + 4 * S)]
    out += _sample(4, 0.0)
    return out


def test_the_row_says_what_the_gpu_did_under_load() -> None:
    """Identity in provenance and the row; figures after readiness; busy % over the AIPerf phase only."""
    report = fold(_events())
    assert report.provenance.gpu_identity == [H100]
    [row] = report.rows
    assert row.gpus == [H100] and row.gpu_busy_percent == 50.0
    [gpu] = row.server.gpus
    assert (gpu.samples, gpu.utilization_mean_percent, gpu.utilization_max_percent) == (4, 25.0, 60.0)
    assert (gpu.power_max_w, gpu.temperature_max_c, gpu.sm_clock_min_mhz) == (360.0, 44, 1976)
    assert gpu.throttle_reasons == {"sw_power_cap": 2} and gpu.uuid == "GPU-32fe8bdc"
    md = render_markdown(report)
    assert "| 0 | NVIDIA H100 80GB HBM3 | GPU-32fe8bdc | 580.159.04 | 13.0 | 1980/- | 700 | disabled |" in md
    assert "GPU busy 50.00 % over the AIPerf phase" in md


def test_the_soak_report_shows_the_gpu_and_the_namespace_notice() -> None:
    """The soak report's GPU section: identity, figures with busy % under the soak's load, the notice."""
    notice = "per-process GPU memory unavailable: PID namespace (NVML lists pid(s) 2931847, ...)"
    events = [e if not isinstance(e, PhaseStarted) or e.phase != "aiperf" else PhaseStarted(phase="soak", model="m")
              for e in _events()]
    events = [PhaseFinished(phase="soak", model="m", outcome="passed") if isinstance(e, PhaseFinished) else e
              for e in events] + [Warned(code="gpu_pid_namespace", message=notice)]
    report = fold_soak(events)
    assert report.gpu_identity == [H100] and report.gpu_notices == [notice]
    assert report.gpus[0].utilization_mean_percent == 25.0
    md = render_soak_markdown(report)
    assert "## GPU" in md and f"- {notice}" in md and "sw_power_cap (2)" in md
