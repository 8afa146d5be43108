"""Render a Ledger as Markdown (for people and the tracker) or JSON. Pure: reads only the Ledger."""

from __future__ import annotations

import msgspec

from orchestrator.ledger.join import Ledger, RunRowRef

__all__ = ["ledger_json", "ledger_markdown"]

_encoder = msgspec.json.Encoder(order="deterministic")


def ledger_json(ledger: Ledger) -> bytes:
    """The ledger as indented JSON (stable key order), newline-terminated."""
    return msgspec.json.format(_encoder.encode(ledger), indent=2) + b"\n"


def _cell(value: object) -> str:
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, list):
        value = "; ".join(str(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]


def _ref(r: RunRowRef) -> str:
    stage = f" at {r.failed_stage}" if r.failed_stage else ""
    return f"{r.run_id}: {r.model} {r.status}{stage}" + (f" ({r.note})" if r.note else "")


def ledger_markdown(ledger: Ledger) -> str:
    """The ledger for people: the verdict and its blockers first, then one line per checkpoint, the
    variants apart, runs and rows that match nothing."""
    in_scope = [ln for ln in ledger.lines if ln.in_scope]
    out = [
        "# Group ledger",
        "",
        (f"**Can the group close? {'yes' if ledger.can_close else 'no'}.** "
        f"{sum(ln.final for ln in in_scope)} of {len(in_scope)} checkpoints have a final status backed by "
        f"evidence; {len(ledger.variants)} variants listed apart (never counted as models)."
        + (f" Open item: {len(ledger.open_items)} audio-QA checkpoint"
           f"{'s' if len(ledger.open_items) != 1 else ''} not qualified." if ledger.open_items else "")),
        "",
        f"- TRTMC revision of the inventory: `{ledger.trtmc_commit or 'unknown'}`",
        f"- dataset identity: `{ledger.dataset_identity or 'none (no run rows)'}`",
        f"- runs read: {len(ledger.runs)}",
        "",
    ]
    if ledger.open_items:
        out += ["## The group's open item", "",
                "Audio and a question in, text out: the checkpoints this group exists for that no run has qualified, "
                "and exactly what blocks each. A `blocked` one is final for closing; it stays open here.", ""]
        out += _table(["checkpoint", "status", "route supports", "blocked by", "what blocks it"],
                      [[o.checkpoint, o.status or "none", o.route, o.blocked_by, o.reasons] for o in ledger.open_items])
        out.append("")
    if ledger.blockers:
        out += ["## What blocks closing", ""] + [f"- {b}" for b in ledger.blockers] + [""]
    out += ["## Checkpoints", ""]
    out += _table(["checkpoint", "revision", "profile", "class", "status", "final", "from", "reason or gap",
                   "blockers"],
                  [[ln.checkpoint + ("" if ln.in_scope else " (outside the group)"), ln.revision, ln.profile,
                    ln.capability_class, ln.status or "none", "yes" if ln.final else "no", ln.source, ln.reason,
                    ln.blockers] for ln in ledger.lines])
    out += ["", "## Variants (never counted as models)", ""]
    out += _table(["checkpoint", "profile", "kinds", "differs by", "precision", "normal profile", "runs"],
                  [[v.checkpoint, v.profile, v.kinds, v.differing_axis, v.precision, v.normal_profile,
                    [_ref(r) for r in v.runs]]
                   for v in ledger.variants]) if ledger.variants else ["None."]
    out += ["", "## Runs", ""]
    out += _table(["run", "command", "started", "status", "server", "TRTMC revision", "dataset", "named"],
                  [[r.run_id, r.command, r.started_at, r.status, r.server_kind, r.trtmc_revision[:12],
                    r.dataset_identity[:12], r.named] for r in ledger.runs]) if ledger.runs else ["None."]
    others = [(ln.checkpoint, r) for ln in ledger.lines for r in ln.other_runs]
    if others or ledger.outside:
        out += ["", "## Rows not counted", ""]
        out += [f"- {cp}: {_ref(r)}" for cp, r in others] + [f"- {_ref(r)}" for r in ledger.outside]
    out += ["", "## Evidence", ""]
    for ln in ledger.lines:
        if ln.evidence:
            out.append(f"- **{ln.checkpoint}** ({ln.source}): " + "; ".join(f"`{e}`" for e in ln.evidence[:4]))
    return "\n".join(out).rstrip() + "\n"
