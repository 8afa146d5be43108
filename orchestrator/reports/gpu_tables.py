"""The GPU tables every report shows (identity, figures, attribution notices), as rows for Markdown and HTML."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.events import GpuIdentity
from orchestrator.reports.schema import GpuFacts, RunReport

__all__ = ["IDENTITY_HEAD", "FIGURE_HEAD", "identity_rows", "figure_rows", "gpu_markdown", "gpu_context", "gpu_notices",
           "GPU_NOTICE_CODES"]

# The Warned codes that qualify the GPU figures shown (a host without NVML has no GPU section: its
# gpu_sampling_unavailable notice stays with the run's other notices).
GPU_NOTICE_CODES = ("gpu_pid_namespace",)

IDENTITY_HEAD = ["GPU", "name", "UUID", "driver", "CUDA", "max SM/memory clock MHz", "power limit W", "MIG",
                 "memory GiB", "bus"]
FIGURE_HEAD = ["GPU", "samples", "utilisation mean/max %", "busy % under load", "power mean/max W", "temp max °C",
               "SM clock mean/min MHz", "clocks held down by (samples)", "memory peak: device / server MiB"]


def _n(v: float | None, fmt: str = "{:g}") -> str:
    return "-" if v is None else fmt.format(v)


def identity_rows(identities: Sequence[GpuIdentity]) -> list[list[str]]:
    return [[str(g.index), g.name, g.uuid or "-", g.driver_version or "-", g.cuda_version or "-",
             f"{_n(g.max_sm_clock_mhz)}/{_n(g.max_memory_clock_mhz)}", _n(g.power_limit_w),
             g.mig_mode or "-", f"{g.memory_total_bytes / 2**30:.1f}", g.pci_bus_id or "-"] for g in identities]


def figure_rows(facts: Sequence[GpuFacts]) -> list[list[str]]:
    rows = []
    for f in facts:
        reasons = ", ".join(f"{k} ({v})" for k, v in sorted(f.throttle_reasons.items(), key=lambda kv: -kv[1])) or "none"
        server = _n(f.peak_tree_memory_bytes and f.peak_tree_memory_bytes / 2**20, "{:.0f}")
        if f.memory_scope == "device":
            server = "n/a (PID namespace: judged device-wide)"
        rows.append([f"{f.index} {f.name}", str(f.samples),
                     f"{_n(f.utilization_mean_percent)}/{_n(f.utilization_max_percent)}", _n(f.busy_percent),
                     f"{_n(f.power_mean_w)}/{_n(f.power_max_w)}", _n(f.temperature_max_c),
                     f"{_n(f.sm_clock_mean_mhz, '{:.0f}')}/{_n(f.sm_clock_min_mhz)}", reasons,
                     f"{_n(f.peak_memory_used_bytes and f.peak_memory_used_bytes / 2**20, '{:.0f}')} / {server}"])
    return rows


def gpu_markdown(identities: Sequence[GpuIdentity], facts: Sequence[GpuFacts], notices: Sequence[str]) -> list[str]:
    """The GPU section of a Markdown report; nothing where the run saw no GPU."""
    if not identities and not facts and not notices:
        return []

    def table(head: list[str], rows: list[list[str]]) -> list[str]:
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                *("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows), ""]

    lines = ["## GPU", "", "Utilisation is the mean of NVML's own samples over each sample period (docs/gpu.md).", ""]
    lines += [f"- {n}" for n in notices] + ([""] if notices else [])
    if identities:
        lines += table(IDENTITY_HEAD, identity_rows(identities))
    if facts:
        lines += table(FIGURE_HEAD, figure_rows(facts))
    return lines


def gpu_context(identities: Sequence[GpuIdentity], facts: Sequence[GpuFacts], notices: Sequence[str]) -> dict[str, object]:
    """What templates/gpu.html's `gpu_section` renders."""
    return {"identity_head": IDENTITY_HEAD, "identity_rows": identity_rows(identities), "figure_head": FIGURE_HEAD,
            "figure_rows": figure_rows(facts), "notices": list(notices)}


def gpu_notices(report: RunReport) -> list[str]:
    """The run's notices about its GPU figures, once each."""
    return list(dict.fromkeys(n.message for n in report.notices if n.code in GPU_NOTICE_CODES))
