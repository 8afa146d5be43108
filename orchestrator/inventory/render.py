"""Render an Inventory as Markdown (for people) or JSON (for the ledger and `--against`); pure.
The JSON's shape is documented in docs/inventory.md (schema_version 3, fields only ever appended).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import msgspec

from orchestrator.inventory.records import (
    BLOCKER_GAP_KINDS,
    CheckpointRow,
    Evidence,
    Inventory,
    RouteLimits,
    VariantRow,
)

__all__ = ["to_markdown", "to_json", "source_line", "gap_sentence", "checkpoint_label", "route_text", "quality_text",
           "gate_text", "declared_text"]

_encoder = msgspec.json.Encoder(order="deterministic")
_GAP_CELL = 110  # characters: the main table must fit a screen


def to_json(inv: Inventory) -> bytes:
    """The inventory as indented JSON (stable key order), newline-terminated."""
    return msgspec.json.format(_encoder.encode(inv), indent=2) + b"\n"


def _cell(value: object) -> str:
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _value(value: object) -> str:
    text = msgspec.json.encode(value).decode() if isinstance(value, (dict, list)) else str(value)
    return text if len(text) <= 100 else text[:97] + "..."


def source_line(inv: Inventory) -> str:
    """Where the audit read from, in one line (a bare repository says so)."""
    src = inv.source
    how = "a bare git repository, read at its HEAD" if src.bare else f"the {src.read_via}"
    at = f" at `{src.rev}`" if src.rev and not src.bare else ""
    dirty = " (working tree differs from it)" if src.dirty else ""
    return f"`{src.root}` read from {how}{at}; commit `{src.commit or 'not a git checkout'}`{dirty}"


def gap_sentence(r: CheckpointRow) -> str:
    """The row's gap in one short sentence for the main table (a blocked audio-QA row: what blocks it)."""
    text = r.gaps[0].summary if r.gaps and r.gaps[0].summary else r.gap.split("; ", 1)[0].split(", so ", 1)[0]
    if r.status == "blocked" and r.blockers:
        text = f"blocked by {', '.join(dict.fromkeys(b.kind for b in r.blockers))}; {text}"
    return text if len(text) <= _GAP_CELL else text[:_GAP_CELL - 3] + "..."


def route_text(route: RouteLimits | None) -> str:
    """What the route supports, in a phrase: `fp16, TP 1, batch 1, standalone; paired media not mapped`."""
    if route is None:
        return "-"
    parts = [route.precision or "precision ?", f"TP {route.tensor_parallel if route.tensor_parallel is not None else '?'}",
             f"batch {route.batch if route.batch is not None else '?'}", *route.modes]
    return ", ".join(parts) + (f"; paired media {route.paired_media}" if route.paired_media else "")


def quality_text(r: CheckpointRow) -> str:
    """The owners' recorded audio results: `passed: standalone text and audio` or `quality failure: ...`."""
    return "; ".join(f"{q.outcome.replace('-', ' ')}: {q.mode}" for q in r.quality) or "none recorded"


def declared_text(r: CheckpointRow) -> str:
    """A family's support.py Tasks, each once, with its lines and the condition it is declared under."""
    lines: dict[str, list[str]] = {}
    when: dict[str, str] = {}
    for t in r.declared_tasks:
        lines.setdefault(t.task, []).append(str(t.line))
        if t.condition:
            when.setdefault(t.task, t.condition)
    return ", ".join(f"`{task}` (line {', '.join(ln)}{', only if ' + when[task] if task in when else ''})"
                     for task, ln in lines.items())


def gate_text(r: CheckpointRow) -> str:
    gate = r.owner_gate
    if gate is None:
        return "-"
    return "yes: " + "; ".join(_cite(e) for e in gate.evidence[:2]) if gate.exists else "none"


def checkpoint_label(r: CheckpointRow) -> str:
    """The checkpoint, marked when only bench.toml's candidates put it in the table."""
    if r.candidate and not r.in_audio_group:
        return f"{r.checkpoint} (candidate, outside the group)"
    return f"{r.checkpoint} (candidate)" if r.candidate else r.checkpoint


def _profile(r: CheckpointRow) -> str:
    if r.profile:
        return r.profile + ("" if r.full_model_coverage else " (no full profile)")
    return "(no manifest)"


def _cite(e: Evidence) -> str:
    return f"`{e.file}` {e.field}"


def _variant_line(v: VariantRow) -> str:
    return f"- variant `{v.profile}`: {'; '.join(v.differs or v.kinds)} (`{v.file}`)"


def _tier(inv: Inventory, r: CheckpointRow, profile: str) -> str:
    """An L0 tier profile with whatever else differs from the normal profile (TP, precision)."""
    other = [d for v in inv.variants if v.checkpoint == r.checkpoint and v.profile == profile
             for d in v.differs if not d.startswith("L0 CI tier")]
    return f"`{profile}`" + (f" ({'; '.join(other)})" if other else "")


def _details(inv: Inventory, r: CheckpointRow) -> list[str]:
    out = [f"### {r.checkpoint}" + (f"@{r.revision}" if r.revision else ""), ""]
    facts = [f"class **{r.capability_class}**, status **{r.status}**",
             f"family `{r.family or '-'}`"]
    if r.candidate:
        facts.append(f"bench.toml candidate `{r.candidate}`" + ("" if r.in_audio_group else
                                                                  " (outside the audio group)"))
    out.append("- " + "; ".join(facts))
    if r.profile:
        prec = r.precision or "-"
        if r.precision_source is not None:
            prec += f" ({'TRTMC default, ' if r.precision_source.claim == 'precision_default' else ''}" \
                    f"{_cite(r.precision_source)})"
        out.append(f"- normal profile `{r.profile}` (`{r.file}`): Task `{r.task_strategy or '-'}`, runtime "
                   f"`{r.runtime_strategy or '-'}`, precision {prec}, cache {r.cache_length or '-'}")
    if r.user_contracts or r.controls:
        ctl = ", ".join(f"{c.field}={'/'.join(str(v) for v in c.values[:3])}" for c in r.controls) or "-"
        out.append(f"- contracts: {_cell(r.user_contracts)}; controls: {ctl}")
    if r.audio_inputs:
        out.append(f"- audio inputs ({len(r.audio_inputs)}): {', '.join(f'`{a}`' for a in r.audio_inputs)}")
    if r.declared_tasks:
        out.append(f"- its family's Tasks (`{r.declared_tasks[0].file}`): {declared_text(r)}")
    if r.route is not None:
        cites = "; ".join(dict.fromkeys(_cite(e) for e in r.route.evidence))
        out.append(f"- route: {route_text(r.route)} ({cites})")
    out += [f"- owners' recorded audio result: {q.outcome.replace('-', ' ')}: {q.mode} (`{q.file}` line {q.line}, "
            f"{q.section or 'results table'}, column \"{q.column}\")" for q in r.quality]
    if (gate := r.owner_gate) is not None:
        out.append(f"- owners' gate: {'yes' if gate.exists else 'none'}" + (
            f" ({'; '.join(_cite(e) for e in gate.evidence[:3])})" if gate.exists else f": {'; '.join(gate.missing)}"))
    out += [f"- blocked by {b.kind}: {b.text}" for b in r.blockers]
    out += [f"- same clip, counted once: {e.value} ({_cite(e)})" for e in r.same_clip]
    for o in r.owner_status:
        words = ", ".join(f"{k} {v}" for k, v in o.platforms.items()) or "-"
        provider = f"; provider: {o.provider}" if o.provider else ""
        out.append(f"- owners' status: profile `{o.profile}` {o.precision}: {words}{provider} "
                   f"(`{o.file}` line {o.line})")
    out += [_variant_line(v) for v in inv.variants if v.checkpoint == r.checkpoint and v.profile
            not in r.l0_tier_profiles]
    if r.l0_tier_profiles:
        tiers = ", ".join(_tier(inv, r, p) for p in r.l0_tier_profiles)
        out.append(f"- L0 CI tier (does not establish coverage): {tiers}")
    for g in r.gaps:
        if r.blockers and g.kind in BLOCKER_GAP_KINDS.values():
            continue  # said above as "blocked by"
        cites = "; ".join(_cite(e) for e in g.evidence[:6])
        out.append(f"- gap: {g.text}" + (f" — see {cites}" if cites else ""))
    out += [f"- note: {n}" for n in r.notes]
    if r.configured_as:
        out.append(f"- configured in bench.toml as: {', '.join(r.configured_as)}")
    out.append("")
    return out


def _evidence(r: CheckpointRow) -> list[str]:
    by_file: dict[str, list[str]] = defaultdict(list)
    for e in r.evidence:
        by_file[e.file].append(f"{e.claim} ({e.field}) = {_value(e.value)}")
    for c in r.controls:
        for e in c.evidence[:2]:
            by_file[e.file].append(f"control {c.kind} ({e.field}) = {_value(e.value)}")
    lines = [f"- **{r.checkpoint}**"]
    for file, items in by_file.items():
        lines.append(f"  - `{file}`: " + "; ".join(dict.fromkeys(items)))
    return lines


def to_markdown(inv: Inventory) -> str:
    """A table that fits a screen, then details per checkpoint, left-out checkpoints, and grouped evidence."""
    out = [
        "# Audio-QA inventory of a TRTMC checkout",
        "",
        f"- checkout: {source_line(inv)}",
        f"- manifests scanned: {inv.manifests_scanned} ({', '.join(inv.layouts_found) or 'no layout'}); in the "
        f"audio-conditioned group: {inv.manifests_in_group}; checkpoints: {len(inv.rows)}; variants: "
        f"{len(inv.variants)}; unreadable manifests: {len(inv.errors)}",
        f"- every checkpoint accounted for: {'yes' if inv.accounted else 'NO'}",
    ]
    if inv.precision_default is not None:
        d = inv.precision_default
        out.append(f"- a manifest without `precision` builds at {d.value} (TRTMC's default: {_cite(d)})")
    if inv.layout:
        out.append(f"- layout: {inv.layout} (" + "; ".join(_cite(e) for e in inv.layout_evidence) + ")")
    if (route := inv.served_route) is not None:
        said = ("absent" if not route.present else f"unreadable: {route.error}" if route.accepts_audio is None
                else f"accepts {', '.join(f'`{t}`' for t in route.part_types)} content parts"
                + ("" if route.accepts_audio else ", no audio"))
        out.append(f"- served chat route (`{route.file}`): {said}"
                   + (f" ({'; '.join(_cite(e) for e in route.evidence)})" if route.evidence and route.present else ""))
    out += ["", "## Checkpoints", ""]
    rows = [[checkpoint_label(r), r.capability_class, r.status, _profile(r), r.task_strategy, gap_sentence(r)]
            for r in inv.rows]
    rows += [[f"(unreadable) {e.file}", "unknown", "error", "-", "-", e.error] for e in inv.errors]
    out += _table(["checkpoint", "class", "status", "normal profile", "native Task", "gap"], rows)
    candidates = [r for r in inv.rows if r.capability_class == "audio-qa"]
    if candidates:
        out += ["", "## Audio-QA candidates", ""]
        out += _table(["checkpoint", "status", "route supports", "owners' gate", "owners' recorded audio results",
                       "blocked by"],
                      [[r.checkpoint, r.status, route_text(r.route), gate_text(r), quality_text(r),
                        ", ".join(dict.fromkeys(b.kind for b in r.blockers)) or "-"] for r in candidates])
    out += ["", "## Considered, not in the group", ""]
    out += [f"- **{c.checkpoint}** (`{c.profile}`, {c.capability_class}): {c.reason} — "
            + "; ".join(_cite(e) for e in c.evidence) for c in inv.considered] or ["None."]
    out += ["", "## Details", ""]
    for r in inv.rows:
        out += _details(inv, r)
    rec = inv.reconciliation
    out += ["## Reconciliation with " + (f"`{rec.config_path}`" if rec.config_path else "bench.toml (none read)"), ""]
    for title, items in (
        ("Group checkpoints missing from [[models]]", rec.group_missing_from_config),
        ("Configured models absent from the checkout", rec.configured_absent_from_checkout),
        ("Configured models outside the audio group", rec.configured_outside_group),
        ("Probe results matching no checkpoint", rec.probes_unmatched),
    ):
        out.append(f"- {title}: " + (", ".join(f"`{i}`" for i in items) if items else "none"))
    if inv.tasks_seen:
        out += ["", "## Audio Tasks in this checkout", ""]
        out += [f"- `{t.task}`: " + ("**not in the Task list: a person must classify it**" if t.flagged
                                     else t.capability_class) + " (" + "; ".join(_cite(e) for e in t.evidence) + ")"
                for t in inv.tasks_seen]
    if inv.family_notes:
        out += ["", "## Family notes", ""]
        out += [f"- `{n.family}`: {n.text}" + ("" if n.accounted else " (not accounted for)") for n in inv.family_notes]
    if inv.unaccounted:
        out += ["", "## Not accounted for", ""] + [f"- {u}" for u in inv.unaccounted]
    out += ["", "## Evidence (by checkpoint, then file)", ""]
    for r in inv.rows:
        out += _evidence(r)
    return "\n".join(out).rstrip() + "\n"
