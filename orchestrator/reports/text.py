"""How report numbers read to people (shared by report.md and report.html): ms, %, MiB, pass counts.

Pure formatting; never computes a result.
"""

from __future__ import annotations

from orchestrator.reports.schema import PassRate

__all__ = ["ms", "pct", "signed_pct", "mib", "num", "rate_cell", "dash"]

dash = "–"


def ms(value: float | None) -> str:
    if value is None:
        return dash
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def pct(value: float | None) -> str:
    return dash if value is None else f"{value * 100:.1f}%"


def signed_pct(value: float | None) -> str:
    return dash if value is None else f"{value * 100:+.1f} pp"


def mib(value: int | None) -> str:
    return dash if value is None else f"{value / 2**20:.1f} MiB"


def num(value: float | None, digits: int = 2) -> str:
    return dash if value is None else f"{value:.{digits}f}"


def rate_cell(r: PassRate | None) -> str:
    """`87.5% (7/8)`; a dash for an empty slice."""
    if r is None or not r.total:
        return dash
    return f"{pct(r.rate)} ({r.correct}/{r.total})"
