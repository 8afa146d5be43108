"""The live page's first HTML: `static/page.html` rendered with the run's state (as `/state` has it, already
scrubbed), so that a page without its script, or a screenshot, shows the counters, verdicts and tables.
Only formats what it is given; the page's script keeps it current afterwards with the same ids."""

from __future__ import annotations

import math
import time
from importlib import resources
from typing import Any, TypedDict

from jinja2 import Environment, StrictUndefined

__all__ = ["render_page", "figure"]


def figure(value: object) -> str:
    """A value as the page's script writes it (`fmt` in page.js): whole numbers and values of 1000 or more
    rounded, others to 3 significant digits, `-` for none."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or abs(value) >= 1000 or float(value).is_integer():
        return str(round(value))
    # toPrecision(3) in fixed notation: the digits after the point that 3 significant ones need.
    return f"{value:.{max(0, 2 - math.floor(math.log10(abs(value))))}f}"


def _hms(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _pairs(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in counts.items())


# The page's state arrives as the scrubbed JSON /state serves (PageState as builtins, page_types.py): the
# fields read here are typed by these views of RunInfo, PointRow and SloState.
class _RunView(TypedDict):
    started_unix_ns: int
    finished_unix_ns: int
    phase: str
    done: int
    total: int
    unit: str
    duration_s: float | None


class _SloView(TypedDict):
    slo: str
    reason: str


class _PointView(TypedDict):
    slos: list[_SloView]
    balanced: bool
    stopped_early: bool
    saturation: list[str]


def _progress(run: _RunView) -> str:
    """The line under the progress bar, as page.js writes it (without the live lag)."""
    now = run["finished_unix_ns"] or time.time_ns()
    elapsed = (now - run["started_unix_ns"]) / 1e9 if run["started_unix_ns"] else 0
    parts = ([f"phase {run['phase']}"] if run["phase"] else []) + \
        ([f"{run['done']} of {run['total']} {run['unit']}"] if run["total"] else [])
    under = f" of {_hms(run['duration_s'])} under load" if run["duration_s"] else ""
    return " · ".join([*parts, f"elapsed {_hms(elapsed)}{under}"])


def _point_why(p: _PointView) -> str:
    """Why a load point did not pass, as page.js says it."""
    why = [f"{c['slo']}: {c['reason']}" for c in p["slos"] if c["reason"]]
    why += [] if p["balanced"] else ["accounting did not balance"]
    why += ["stopped early once an SLO clearly broke"] if p["stopped_early"] else []
    return "; ".join(why + p["saturation"])


def _environment() -> Environment:
    env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(fmt=figure, pairs=_pairs, slo_state=lambda c: f"{c['slo']} {c['outcome']}")
    env.globals.update(progress=_progress, point_why=_point_why)
    return env


_ENV = _environment()
_TEMPLATE = _ENV.from_string((resources.files("orchestrator.live") / "static" / "page.html").read_text("utf-8"))


def render_page(state: dict[str, Any], *, ended: bool) -> str:  # PageState as scrubbed JSON, for the template
    """The page's HTML for `state` (PageState as builtins); `ended`: the run's feed has closed."""
    return _TEMPLATE.render(s=state, ended=ended)
