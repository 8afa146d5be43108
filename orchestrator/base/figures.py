"""How a figure reads to a person on every surface (console, Markdown, HTML, live page): significant digits
written out plainly, thousands grouped, never scientific notation. Imports nothing from the project."""

from __future__ import annotations

import math

__all__ = ["figure", "figure_with_unit"]


def figure(value: float | None, digits: int = 3, *, signed: bool = False) -> str:
    """`value` to `digits` significant digits, plainly: 1683 -> '1,680', 0.0000123 -> '0.0000123', 12.50 -> '12.5';
    `signed` writes the sign of a change ('+1,680', '-799', '+0'). Infinite and NaN read 'inf', '-inf', 'nan';
    None (no figure) reads '-'."""
    sign = "+" if signed else ""
    if value is None:
        return "-"
    if not math.isfinite(value):
        return f"{value:{sign}}"
    rounded = float(f"{value:.{digits}g}")
    if rounded == 0:
        return f"{sign}0" if signed else "0"
    decimals = max(digits - 1 - math.floor(math.log10(abs(rounded))), 0)
    text = f"{rounded:{sign},.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def figure_with_unit(value: float | None, unit: str, digits: int = 3, *, signed: bool = False,
                     missing: str = "-") -> str:
    """`figure` followed by its unit ('+1,680 MiB/h'); `missing` for None."""
    return missing if value is None else f"{figure(value, digits, signed=signed)} {unit}".rstrip()
