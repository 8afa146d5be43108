"""An audio-QA checkpoint done properly: its route's limits, the owners' recorded audio runs, whether an owners'
gate judges it, and exactly what blocks qualifying it. Pure; every blocker cites the checkout.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from orchestrator.inventory.families import FamilyFacts
from orchestrator.inventory.owners import OwnerConfigs, gate_for
from orchestrator.inventory.records import (
    BLOCKER_GAP_KINDS,
    Blocker,
    Evidence,
    Gap,
    OwnerGate,
    QualityRecord,
    RouteLimits,
    ServedRoute,
)

__all__ = ["Checkout", "CandidateDetails", "candidate_details"]
_LIMIT_KEYS = {"precision": "precision", "tensor_parallel_size": "tensor_parallel", "max_batch_size": "batch"}


class Checkout(msgspec.Struct, frozen=True, kw_only=True):
    """The checkout-wide facts every audio-QA row is judged against."""

    route: ServedRoute
    owners: OwnerConfigs = OwnerConfigs()


class CandidateDetails(msgspec.Struct, frozen=True, kw_only=True):
    """What `candidate_details` found for one audio-QA checkpoint; `gaps` are its blockers as row gaps."""

    route: RouteLimits | None
    quality: list[QualityRecord]
    gate: OwnerGate
    blockers: list[Blocker]
    gaps: list[Gap]
    notes: list[str] = []


def _cite(evidence: Sequence[Evidence]) -> str:
    by_file: dict[str, list[str]] = {}
    for e in evidence:
        by_file.setdefault(e.file, []).append(e.field.removeprefix("line "))
    return "; ".join(f"{f} line {', '.join(dict.fromkeys(lines))}" for f, lines in by_file.items())


def _route_blocker(route: ServedRoute) -> Blocker | None:
    if route.accepts_audio:
        return None
    if not route.present:
        return Blocker(kind="route", text=f"no served route: {route.error} ({route.file} is absent)",
                       evidence=list(route.evidence))
    if route.accepts_audio is None:
        return Blocker(kind="route", text=f"the served chat schema could not be read: {route.error} ({route.file})")
    types = ", ".join(f"`{t}`" for t in route.part_types) or "no"
    return Blocker(kind="route", text=f"no served route accepts audio: the chat message content takes only {types} "
                                      f"parts ({_cite(route.evidence)})", evidence=list(route.evidence))


def _limits(family: FamilyFacts | None) -> RouteLimits | None:
    """The README's limits, completed and confirmed by what the build enforces."""
    if family is None:
        return None
    limits = family.readme.limits or RouteLimits()
    code = family.code.build_limits
    for ev in code:
        key, _, value = str(ev.value).partition(" ")
        field = _LIMIT_KEYS.get(key)
        if field == "precision" and not limits.precision:
            limits = msgspec.structs.replace(limits, precision=value.lower())
        elif field in ("tensor_parallel", "batch") and getattr(limits, field) is None and value.isdigit():
            limits = msgspec.structs.replace(limits, **{field: int(value)})
    if not limits.evidence and not code:
        return None
    return msgspec.structs.replace(limits, evidence=[*limits.evidence, *code])


# What its route supports: precision, TP, batch, standalone or paired. Blockers: route, gate, quality, or only that
# bench.toml does not configure it. Each cites the checkout: the served chat schema for the route, the owners'
# qualification files for the gate, the family README for recorded quality.
def candidate_details(*, checkpoint: str, tasks: Sequence[str], profiles: Sequence[str], family: FamilyFacts | None,
                      checkout: Checkout, configured: bool) -> CandidateDetails:
    """Route limits, recorded quality, the owners' gate and the blockers of one audio-QA checkpoint."""
    limits = _limits(family)
    quality = [q for q in (family.readme.quality if family else []) if q.checkpoint.lower() == checkpoint.lower()]
    gate = gate_for(checkout.owners, tasks=tasks, checkpoint=checkpoint, profiles=profiles,
                    family=family.family if family else "")
    blockers: list[Blocker] = []
    if (route := _route_blocker(checkout.route)) is not None:
        blockers.append(route)
    if not gate.exists:
        blockers.append(Blocker(kind="gate", text="no owners' gate: " + "; ".join(gate.missing), evidence=gate.evidence))
    failed = [q for q in quality if q.outcome != "passed"]
    if failed:
        runs = "; ".join(f"{q.mode} ({q.file} line {q.line})" for q in failed)
        blockers.append(Blocker(kind="quality", text=f"the owners recorded its audio runs as quality failures: {runs}",
                                evidence=[Evidence(claim=f"quality:{q.outcome}", file=q.file, field=f"line {q.line}",
                                                   value=f"{q.column}: {q.mode}") for q in failed]))
    notes = []
    if not quality:
        notes.append("the owners record no audio result for it")
    elif not failed:
        notes.append("the owners recorded its audio runs as passing: " + "; ".join(
            f"{q.mode} ({q.file} line {q.line}, {q.section or 'results table'})" for q in quality))
    if not blockers and not configured:
        blockers.append(Blocker(kind="config", text="nothing blocks it in the checkout, but bench.toml [[models]] does "
                                                    "not configure it, so no run qualifies it"))
    gaps = [Gap(text=b.text, summary=b.text.split(":", 1)[0], evidence=b.evidence, kind=BLOCKER_GAP_KINDS[b.kind])
            for b in blockers]
    return CandidateDetails(route=limits, quality=quality, gate=gate, blockers=blockers, gaps=gaps, notes=notes)
