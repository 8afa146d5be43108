"""Render an Inventory as Markdown (checkpoints, errors, variants, gaps, reconciliation, evidence) or JSON.

Pure: reads only the Inventory it is given.
"""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.inventory.records import CheckpointRow, Inventory

__all__ = ["to_markdown", "to_json"]

_encoder = msgspec.json.Encoder(order="deterministic")


def to_json(inv: Inventory) -> bytes:
    """The inventory as indented JSON (stable key order), newline-terminated."""
    return msgspec.json.format(_encoder.encode(inv), indent=2) + b"\n"


def _cell(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _controls(row: CheckpointRow) -> str:
    return ", ".join(f"{c.field}={'/'.join(str(v) for v in c.values[:3])}" for c in row.controls) or "-"


def _profile_cell(r: CheckpointRow) -> str:
    if r.profile:
        return r.profile + ("" if r.full_model_coverage else " (partial only)")
    return "(no manifest)" if r.file else ""  # known from family sources only, or a bare candidate


def to_markdown(inv: Inventory) -> str:
    """The inventory for people: one row per checkpoint first, then errors, variants, gaps and evidence."""
    src = inv.source
    commit = src.commit or "not a git checkout"
    dirty = " (working tree differs from it)" if src.dirty else ""
    out = [
        "# Audio-QA inventory of a TRTMC checkout",
        "",
        f"- checkout: `{src.root}` read from the {src.read_via}"
        + (f" at `{src.rev}`" if src.rev else ""),
        f"- commit audited: `{commit}`{dirty}",
        f"- layouts found: {', '.join(inv.layouts_found) or 'none'}; manifests scanned: {inv.manifests_scanned}; "
        f"in the audio-conditioned group: {inv.manifests_in_group}; checkpoints: {len(inv.rows)}; "
        f"variants: {len(inv.variants)}; unreadable manifests: {len(inv.errors)}",
        f"- every checkpoint accounted for: {'yes' if inv.accounted else 'NO'}",
        "",
        "## Checkpoints (one row each: the normal full-model profile)",
        "",
    ]
    rows = [
        [r.checkpoint, r.revision, r.family, _profile_cell(r),
         r.capability_class, r.status, r.gap, r.task_strategy, r.runtime_strategy, r.user_contracts, r.precision,
         r.cache_length, len(r.audio_inputs) or "-", _controls(r), r.configured_as, len(r.variants) or "-"]
        for r in inv.rows
    ]
    rows += [["(unreadable)", "", "", e.file, "unknown", "error", e.error, "", "", "", "", "", "", "", "", ""]
             for e in inv.errors]
    out += _table(["checkpoint", "revision", "family", "profile", "class", "status", "gap", "task", "runtime",
                   "contracts", "precision", "cache", "audio inputs", "controls", "configured as", "variants"],
                  rows)
    out += ["", "## Variants (never counted as extra models)", ""]
    if inv.variants:
        out += _table(["checkpoint", "profile", "kinds", "precision", "tp", "class", "normal profile", "file"],
                      [[v.checkpoint, v.profile, v.kinds, v.precision, v.tensor_parallel, v.capability_class,
                        v.normal_profile, f"`{v.file}`"] for v in inv.variants])
    else:
        out.append("None.")
    out += ["", "## Gaps", ""]
    gaps = [f"- **{r.checkpoint}** ({r.status}): {r.gap}" for r in inv.rows if r.gap]
    gaps += [f"- **{e.file}** (error): {e.error}" for e in inv.errors]
    out += gaps or ["None."]
    rec = inv.reconciliation
    out += ["", "## Reconciliation with " + (f"`{rec.config_path}`" if rec.config_path else "bench.toml (none read)"), ""]
    for title, items in (
        ("Group checkpoints missing from [[models]]", rec.group_missing_from_config),
        ("Configured models absent from the checkout", rec.configured_absent_from_checkout),
        ("Configured models outside the audio group", rec.configured_outside_group),
        ("Probe results matching no checkpoint", rec.probes_unmatched),
    ):
        out.append(f"- {title}: " + (", ".join(f"`{i}`" for i in items) if items else "none"))
    if inv.unaccounted:
        out += ["", "## Not accounted for", ""] + [f"- {u}" for u in inv.unaccounted]
    out += ["", "## Evidence", ""]
    for r in inv.rows:
        out.append(f"### {r.checkpoint}" + (f"@{r.revision}" if r.revision else ""))
        out += [f"- note: {n}" for n in r.notes]
        out += [f"- {e.claim}: `{e.file}` `{e.field}` = {_cell(e.value if not isinstance(e.value, dict) else msgspec.json.encode(e.value).decode())}"
                for e in r.evidence]
        for c in r.controls:
            out += [f"- control {c.kind}: `{e.file}` `{e.field}` = {_cell(e.value)}" for e in c.evidence[:3]]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
