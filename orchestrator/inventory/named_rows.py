"""Rows for checkpoints no manifest makes: a bench.toml candidate the checkout does not name, and a checkpoint
known only from its family's sources (an audio-QA Task declared and bound, its README naming it). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from orchestrator.inventory.candidate import Checkout, candidate_details
from orchestrator.inventory.families import FamilyFacts
from orchestrator.inventory.profile import Profile
from orchestrator.inventory.records import (
    CheckpointRow,
    ConfiguredModel,
    DeclaredTask,
    Evidence,
    Gap,
    ProbeOutcome,
    TreeSource,
)
from orchestrator.inventory.rows import apply_probes
from orchestrator.inventory.tasks import Declared

__all__ = ["near", "candidate_row", "declared_row"]

_GENERIC_TOKENS = {"instruct", "thinking", "chat", "base", "model", "it", "hf", "v1", "v2"}
# A size part: 2b, 0.6b, 357m, e4b (Gemma's effective size), 30b.
_SIZE = re.compile(r"^[a-z]?\d+(?:\.\d+)?[bm]$")
_NAME_SPLIT = re.compile(r"[-_\s]+")


def _family_and_size(name: str) -> tuple[tuple[str, ...], str]:
    """A model name's family parts (everything before its first size part, generic words dropped) and size."""
    parts = [t for t in _NAME_SPLIT.split(name.rsplit("/", 1)[-1].lower()) if t]
    at = next((i for i, t in enumerate(parts) if _SIZE.match(t)), len(parts))
    return tuple(t for t in parts[:at] if t not in _GENERIC_TOKENS), parts[at] if at < len(parts) else ""


def near(candidate: str, groups: dict[tuple[str, str], list[Profile]], most: int = 3) -> list[str]:
    """Checkpoints that are plausibly the same model as an absent candidate: the same family parts (the
    name before its size, e.g. `gemma-4`, `qwen3-omni`) and the same size when both names give one
    (`gemma-4-E4B-it` matches neither `gemma-2-2b-it` nor `gemma-4-E2B-it`). None otherwise: another
    family or size is another model, and a suggestion would be noise."""
    family, size = _family_and_size(candidate)
    if not family:
        return []
    found = set()
    for (hf_id, _rev), members in groups.items():
        for name in (hf_id, *(p.name for p in members)):
            fam, sz = _family_and_size(name)
            if fam == family and (not size or not sz or sz == size) and hf_id != candidate.lower():
                found.add(members[0].hf_id)
    return sorted(found)[:most]


def candidate_row(candidate: str, configured: list[ConfiguredModel], probes: list[ProbeOutcome],
                   source: TreeSource, near: Sequence[str] = ()) -> CheckpointRow:
    where = f"commit {source.commit[:12]}" if source.commit else source.root
    evidence = [Evidence(claim="candidate", file="bench.toml", field="inventory.candidates", value=candidate)]
    # "No manifest", not "not in the checkout": a README or the Task SDK may still mention it (Gemma 4),
    # but only a manifest, a runtime Task and a served route together establish a capability.
    gap = (f"no manifest in this TRTMC checkout ({where}) names {candidate} as hf_id or profile, so nothing "
           f"there establishes what TRTMC serves for it")
    if near:
        gap += (f"; nearest checkpoints here: {', '.join(near)} (another id is another checkpoint: "
                f"correct [inventory] candidates if one of them is meant)")
    status = "unsupported"
    if configured:
        m = configured[0]
        status, gap = "planned", ""
        evidence.append(Evidence(claim="status:planned", file=m.config_path,
                                 field=f"models[{m.index}].checkpoint", value=m.checkpoint))
    status, gap, notes = apply_probes(status, gap, (candidate.lower(), ""), probes, evidence)
    return CheckpointRow(
        checkpoint=candidate, revision="", family="", profile="", file="", full_model_coverage=False,
        task_strategy="", runtime_strategy="", user_contracts=[], precision="", cache_length=None,
        audio_inputs=[], capability_class="unknown", classes_seen={}, status=status, gap=gap, controls=[],
        evidence=evidence, variants=[], candidate=candidate, in_audio_group=False,
        configured_as=[m.name for m in configured], probes=probes, accounted=True, notes=notes,
        gaps=[Gap(text=gap, summary="no manifest names it in this checkout", evidence=evidence[:1])] if gap else [],
    )


def declared_row(hf_id: str, fam: Declared, *, candidate: str, configured: list[ConfiguredModel],
                  probes: list[ProbeOutcome], family: FamilyFacts, checkout: Checkout) -> CheckpointRow:
    """A checkpoint known only from its family's sources: an audio-QA Task declared and bound, its README naming
    it; the row carries the route's precision and parallelism, the owners' recorded quality and gate, and what
    blocks it."""
    tasks = list(dict.fromkeys(t.task for t in fam.declared))
    decl, bind, named = fam.declared[0], fam.bound[0], fam.named[hf_id]
    evidence = [Evidence(claim="checkpoint", file=named.file, field=named.field, value=named.value),
                Evidence(claim="class:audio-qa", file=decl.file, field=f"line {decl.line}", value=decl.task),
                Evidence(claim="class:audio-qa", file=bind.file, field=bind.field, value=bind.value)]
    if candidate:
        evidence.append(Evidence(claim="candidate", file="bench.toml", field="inventory.candidates", value=candidate))
    details = candidate_details(checkpoint=hf_id, tasks=tasks, profiles=[], family=family, checkout=checkout,
                                configured=bool(configured))
    route = details.route
    precision_source = next((e for e in route.evidence if e.claim in ("route:precision", "route:build")
                             and "precision" in (e.claim + str(e.value))), None) if route else None
    when = f", only if {decl.condition}" if decl.condition else ""
    declared = (f"{decl.task} declared in {decl.file} (line {decl.line}{when}) and bound in {bind.file} ({bind.field}); "
                f"no manifest builds or tests {hf_id}")
    if configured:
        m = configured[0]
        status, gap, gaps = "planned", "", []
        evidence.append(Evidence(claim="status:planned", file=m.config_path, field=f"models[{m.index}].checkpoint",
                                 value=m.checkpoint))
    else:
        status = "blocked"
        gap = f"{declared}; blocked by " + "; ".join(f"{b.kind}: {b.text}" for b in details.blockers)
        gaps = [Gap(text=declared, summary=f"{decl.task} declared and bound, no manifest",
                    evidence=[_declared(decl), bind, named], kind="declared-without-manifest"), *details.gaps]
        evidence += [Evidence(claim=f"status:blocked:{b.kind}", file=e.file, field=e.field, value=e.value)
                     for b in details.blockers for e in b.evidence]
    status, gap, notes = apply_probes(status, gap, (hf_id.lower(), ""), probes, evidence)
    notes.insert(0, "known from the family's sources only (no manifest): whether a build of this checkpoint "
                    "carries the Task depends on its own config, which only a build shows")
    notes += details.notes
    return CheckpointRow(
        checkpoint=hf_id, revision="", family=fam.family, profile="", file=named.file, full_model_coverage=False,
        task_strategy=decl.task, runtime_strategy="", user_contracts=[], precision=route.precision if route else "",
        cache_length=None, audio_inputs=[], capability_class="audio-qa", classes_seen={}, status=status, gap=gap,
        controls=[], evidence=evidence, variants=[], candidate=candidate, in_audio_group=True,
        configured_as=[m.name for m in configured], probes=probes, accounted=True, notes=notes,
        precision_source=precision_source, gaps=gaps if gap else [],
        declared_tasks=list(family.support.tasks) if family.support else [], route=route, quality=details.quality,
        owner_gate=details.gate, blockers=details.blockers,
    )


def _declared(task: DeclaredTask) -> Evidence:
    return Evidence(claim="task_declared", file=task.file, field=f"line {task.line}", value=task.task)
