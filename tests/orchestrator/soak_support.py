"""A soak window event from the fields a test names, for the soak report and checkpoint tests."""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.events import (
    SoakWindowClosed,
    WindowStats,
)

T0 = 1_800_000_000 * 10**9


def _window(i: int, rss_mib: float) -> SoakWindowClosed:
    return SoakWindowClosed(window=f"soak/w{i:04d}", index=i, summary=_stats({
        "window": f"soak/w{i:04d}", "index": i, "start_unix_ns": T0 + (i - 1) * 15 * 10**9, "end_unix_ns": T0 + i * 15 * 10**9, "issued": 10, "ok": 9,
        "errors": 1, "by_cause": {"server_crash": 1}, "error_rate": 0.1, "correct": 8, "scored": 9,
        "client_latency_ms": {"p50": 100.0, "p99": 180.0}, "server_latency_ms": {"p50": 90.0, "p99": 170.0},
        "rss": {"median_bytes": rss_mib * 2**20, "peak_bytes": int(rss_mib * 2**20), "start_bytes": 1, "end_bytes": 2},
        "gpu_memory": {}, "restarts": 0, "correctness_passed": True, "aiperf_classification": "complete"}))


def _stats(summary: dict[str, Any]) -> WindowStats:
    """A journaled window summary from the fields a test names (the rest at their defaults)."""
    return msgspec.convert(summary, WindowStats)

