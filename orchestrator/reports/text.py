"""How report numbers read to people (shared by report.md and report.html): ms, %, MiB, pass counts.

Pure formatting; never computes a result.
"""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.events import AiperfSettings
from orchestrator.reports.schema import CompletenessLine, PassRate, PhaseCounts

__all__ = ["ms", "pct", "signed_pct", "mib", "num", "rate_cell", "dash", "causes_text", "COMPLETENESS_HEAD", "INCOMPLETE_HEAD",
           "completeness_rows", "incomplete_rows", "settings_rows", "json_text"]

COMPLETENESS_HEAD = ["Completeness via", "Checked", "Complete", "Defects"]
INCOMPLETE_HEAD = ["Path", "Item", "Arm", "Request id", "Defects", "Verdict", "Answer"]

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


def completeness_rows(lines: list[CompletenessLine]) -> list[list[str]]:
    """`http | 24 | 22 | echo 1, length_limit 1` per path; `complete` when no defect was found."""
    return [[c.path, str(c.checked), str(c.complete),
             ", ".join(f"{d} {n}" for d, n in c.defects.items()) or "complete"] for c in lines]


def incomplete_rows(lines: list[CompletenessLine]) -> list[list[str]]:
    """Each incomplete answer beside its verdict (capability answers are not scored: a dash)."""
    rows = []
    for c in lines:
        for i in c.items:
            rows.append([c.path, i.item_id, i.arm, i.request_id,
                         "; ".join(f"{d} ({why})" for d, why in zip(i.defects, i.details, strict=False)) or ", ".join(i.defects),
                         i.verdict or dash, repr(i.answer)])
        if c.items_left_out:
            rows.append([c.path, f"... {c.items_left_out} more in the journal", "", "", "", "", ""])
    return rows


def causes_text(c: PhaseCounts) -> str:
    """Errors by cause, each with the crash rule that decided it where one did:
    `connection 8 (refused 8), server_crash 2 (open_at_exit 2)`."""
    parts = []
    for cause, n in c.by_cause.items():
        rules = {k.split("/", 1)[1]: v for k, v in c.by_rule.items() if k.split("/", 1)[0] == cause}
        note = f" ({', '.join(f'{r} {m}' for r, m in rules.items())})" if rules else ""
        parts.append(f"{cause} {n}{note}")
    return ", ".join(parts) or "0"


def settings_rows(settings: AiperfSettings | None) -> list[list[Any]]:
    """The AIPerf workload as (setting, value) rows, by setting name."""
    return [[k, v] for k, v in sorted(msgspec.structs.asdict(settings).items())] if settings is not None else []


def json_text(value: msgspec.Struct) -> str:
    """A typed value (capability evidence, ...) as indented JSON for a reader, keys sorted."""
    return msgspec.json.format(msgspec.json.encode(value, order="sorted"), indent=1).decode()
