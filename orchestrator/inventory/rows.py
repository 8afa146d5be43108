"""Build one CheckpointRow (and its VariantRows) per checkpoint: normal profile, class, status and gap.
Pure: reads nothing from disk or git (that is `tree`) and renders nothing (that is `render`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import msgspec

from orchestrator.inventory.candidate import CandidateDetails, Checkout, candidate_details
from orchestrator.inventory.classify import CLASS_WHY
from orchestrator.inventory.families import FamilyFacts
from orchestrator.inventory.findings import NO_AUDIO_PATH, family_gaps
from orchestrator.inventory.owners import model_config_evidence
from orchestrator.inventory.paths import SERVER_SCHEMA
from orchestrator.inventory.profile import Profile
from orchestrator.inventory.records import (
    CAPABILITY_CLASSES,
    CheckpointRow,
    ConfiguredModel,
    Evidence,
    Gap,
    ProbeOutcome,
    ServedRoute,
    VariantRow,
)

__all__ = ["family_defaults", "checkpoints", "match", "checkpoint_row", "apply_probes", "summary", "owner_config_gap"]

_PRECISION_RANK = ("bf16", "fp16", "fp32", "fp8", "nvfp4", "int8", "int4")
# Without a checkout's facts (tests of the manifest rules alone), the route is unknown.
_NO_CHECKOUT = Checkout(route=ServedRoute(file=SERVER_SCHEMA, present=False, error="the audit was given no checkout files"))


def _precision_rank(precision: str) -> tuple[int, str]:
    rank = _PRECISION_RANK.index(precision) if precision in _PRECISION_RANK else len(_PRECISION_RANK)
    return rank, precision


# Normal-profile rule (one row per checkpoint = `hf_id` + `hf_revision`; every other profile is a variant):
# 0. A profile's precision is its manifest's `precision`, or TRTMC's own default for an omitted one (the e2e harness
#    and build CLI build it at fp32; see `precision`), cited either way.
# 1. A profile is *tensor-parallel* when `tensor_parallel_size` (or `tp_size`) > 1 or its name has a `-tpN` part,
#    *context-parallel* likewise with `cp_size`/`-cpN`; it is an *L0 CI tier* when its name has an `l0` part or every
#    `ci_tier` it sets says l0 (`"l0_only"`: same checkpoint and runtime, a shorter budget); it is *partial* when its
#    name has a `partial`, `random`, `regression`, `smoke`, `dummy` or `probeNN` part, or the manifest carries
#    `partial: true` or `random_weights: true`. None of these counts as full-model coverage. (`l0_replacement` names
#    the L0 stand-in that PR CI runs instead of the profile carrying it, so it marks that profile as full, not as a
#    tier.)
def _full(p: Profile) -> bool:
    return p.tensor_parallel == 1 and p.context_parallel == 1 and not p.partial_reasons and not p.l0_tier


# 2. The family's default precision is the most frequent precision among the family's full-model profiles across the
#    whole checkout; ties go to bf16, fp16, fp32, fp8, nvfp4, int8, int4, then alphabetical.
def family_defaults(profiles: Sequence[Profile]) -> dict[str, str]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for p in profiles:
        if _full(p):
            counts[p.family][p.precision] += 1
    return {
        fam: min(c, key=lambda prec: (-c[prec], *_precision_rank(prec))) for fam, c in counts.items()
    }


# 4. Every other profile of the checkpoint is a variant labelled by what differs from the normal profile: kinds
#    `tensor-parallel`, `context-parallel`, `l0-ci-tier`, `partial`, `precision` (another effective precision), or
#    `alternate` when none of these differ; `differs` spells each out with both values.
def _differences(p: Profile, normal: Profile) -> tuple[list[str], list[str]]:
    """(kinds, phrases): each axis on which the variant differs from the normal profile."""
    kinds: list[str] = []
    phrases: list[str] = []
    if p.tensor_parallel != normal.tensor_parallel:
        kinds.append("tensor-parallel")
        phrases.append(f"TP {p.tensor_parallel} (normal {normal.tensor_parallel})")
    if p.context_parallel != normal.context_parallel:
        kinds.append("context-parallel")
        phrases.append(f"CP {p.context_parallel} (normal {normal.context_parallel})")
    if p.l0_tier and not normal.l0_tier:
        kinds.append("l0-ci-tier")
        phrases.append(f"L0 CI tier ({p.l0_tier})")
    if p.partial_reasons and not normal.partial_reasons:
        kinds.append("partial")
        phrases.append(f"partial ({', '.join(p.partial_reasons)})")
    if p.precision != normal.precision:
        kinds.append("precision")
        phrases.append(f"precision {p.precision or '?'} (normal {normal.precision or '?'})")
    return kinds or ["alternate"], phrases or ["another full profile: same TP, CP, tier and precision"]


def checkpoints(profiles: Sequence[Profile]) -> dict[tuple[str, str], list[Profile]]:
    """Group by (hf_id, hf_revision); an unpinned profile joins the checkpoint's one pinned revision."""
    pinned: dict[str, set[str]] = defaultdict(set)
    for p in profiles:
        if p.revision:
            pinned[p.hf_id.lower()].add(p.revision)
    groups: dict[tuple[str, str], list[Profile]] = defaultdict(list)
    for p in profiles:
        revision = p.revision
        revisions = pinned.get(p.hf_id.lower(), set())
        if not revision and len(revisions) == 1:
            revision = next(iter(revisions))
        groups[(p.hf_id.lower(), revision)].append(p)
    return groups


# 3. The normal profile is the full-model profile of the checkpoint at the family's default precision; failing that,
#    at the best-ranked precision; ties go to the shorter, then alphabetically first name. A checkpoint with no
#    full-model profile keeps its best partial/TP profile as representative and is marked `full_model_coverage =
#    false`.
def _normal(members: list[Profile], default_precision: str) -> tuple[Profile, bool]:
    full = [p for p in members if _full(p)]
    pool = full or members

    def key(p: Profile) -> tuple[bool, bool, int, int, bool, tuple[int, str], int, str]:
        return (bool(p.partial_reasons), bool(p.l0_tier), p.tensor_parallel, p.context_parallel,
                p.precision != default_precision,
                _precision_rank(p.precision), len(p.name), p.name)

    return min(pool, key=key), bool(full)


def match(text: str, hf_id: str, names: Iterable[str]) -> bool:
    low = text.lower()
    return bool(low) and (low == hf_id.lower() or low in {n.lower() for n in names})


def _probe_status(probe: ProbeOutcome) -> str:
    """A probe's status word; a failure after the capability stage keeps what earlier stages proved."""
    if probe.status != "failed":
        return probe.status
    stage = probe.failed_stage.lower()
    if stage in ("correctness", "family_correctness"):
        return "implemented"
    if stage in ("identity", "aiperf", "load"):
        return "family-validated"
    return ""


def owner_config_gap(checkout: Checkout, profiles: Sequence[str]) -> Gap | None:
    """How the owners' profile config judges a checkpoint that takes no audio (its lines), if it has one."""
    lines = model_config_evidence(checkout.owners, profiles)
    if not lines:
        return None
    said = "; ".join(f"`{e.value}` (line {e.field.removeprefix('line ')})" for e in lines[:3])
    return Gap(text=f"the owners qualify it without audio: {lines[0].file} says {said}",
               summary="the owners qualify it without audio", evidence=lines, kind="owner-config")


def _unread(family: FamilyFacts | None, name: str, cls: str) -> list[str]:
    """Say when the family's code could not show why a text or image checkpoint takes no audio."""
    if cls not in NO_AUDIO_PATH:
        return []
    if family is None or not (family.code.build_files or family.code.runtime_files or family.support):
        return [f"no support.py, build or runtime file of family `{name}` was read: its own code cannot show why "
                f"no audio reaches it"]
    if family.code.runtime_files and not family.code.loaded:
        return [f"its runtime ({family.code.runtime_files[0]}) loads no section under a literal name: which engines "
                f"it runs could not be read"]
    return []


# Class: the strongest over the checkpoint's profiles; speech output becomes `voice-cloning` when the family's runtime
# takes a reference voice clip or its support.py requires a speech tokenizer (cited).
def _class(strongest: Profile, family: FamilyFacts | None) -> tuple[str, str, list[Evidence]]:
    """(class, why, evidence): speech output that takes a reference voice clip is voice cloning."""
    cls, why, evidence = strongest.capability, strongest.capability_why, list(strongest.capability_evidence)
    voice = family.voice_evidence() if family is not None else []
    if cls == "speech-output-only" and voice:
        return "voice-cloning", CLASS_WHY["voice-cloning"], evidence + voice
    return cls, why, evidence


# Status precedence for a row: `--probe` evidence (newest run first) > manifest class other than audio-qa
# (`unsupported`, with the gap and the family's findings) > configured in bench.toml and not yet run (`planned`) >
# audio-qa with a blocker (`blocked`: route, owners' gate, recorded quality; see `candidate`).
def checkpoint_row(
    key: tuple[str, str],
    members: list[Profile],
    defaults: dict[str, str],
    *,
    candidate: str,
    configured: list[ConfiguredModel],
    probes: list[ProbeOutcome],
    family: FamilyFacts | None = None,
    checkout: Checkout | None = None,
) -> tuple[CheckpointRow, list[VariantRow]]:
    """The row of one checkpoint from its profiles, its family's files and the checkout's route and gates."""
    family_name = members[0].family
    normal, full = _normal(members, defaults.get(family_name, ""))
    ordered = sorted(members, key=lambda p: (CAPABILITY_CLASSES.index(p.capability), p is not normal))
    strongest = ordered[0]
    cls, why, class_evidence = _class(strongest, family)
    classes_seen = {p.name: p.capability for p in sorted(members, key=lambda p: p.name)}
    evidence: list[Evidence] = []
    for claim in ("checkpoint", "revision", "profile", "family", "task_strategy", "runtime_strategy",
                  "user_contract", "precision", "cache_length", "audio_input"):
        evidence += normal.evidence.get(claim, [])
    if normal.group_reason is not None:
        evidence.append(Evidence(claim="audio_group", file=normal.doc.path, field=normal.group_reason.field,
                                 value=normal.group_reason.value))
    evidence += [Evidence(claim=f"class:{cls}", file=ev.file, field=ev.field, value=ev.value) for ev in class_evidence]
    notes: list[str] = []
    if not full:
        notes.append("no full-model profile: only partial, L0 CI tier or parallel profiles; "
                     "this row does not count as full-model coverage")
    if strongest is not normal:
        notes.append(f"class {cls} comes from profile {strongest.name} ({strongest.doc.path}); "
                     f"the normal profile {normal.name} is {normal.capability}")
    others = {p.capability for p in members} - {strongest.capability}
    gap_classes = f" (other profiles: {', '.join(sorted(others))})" if others else ""
    profiles = [normal.name, *sorted(p.name for p in members if p is not normal)]
    details = None
    if cls == "audio-qa":
        details = candidate_details(checkpoint=normal.hf_id, tasks=[normal.task] if normal.task else [],
                                    profiles=profiles, family=family, checkout=checkout or _NO_CHECKOUT,
                                    configured=bool(configured))
        notes += details.notes
    status, gap, class_gaps = _manifest_status(cls, why, class_evidence, configured, evidence, gap_classes, details)
    if strongest.skips:
        reason = "; ".join(dict.fromkeys(strongest.skips))
        evidence += strongest.evidence.get("skip", [])
        notes.append(f"profile {strongest.name} is skipped by its own manifest: {reason}")
        if gap:
            gap = f"{gap}; and the manifest skips it: {reason}"
            class_gaps = [msgspec.structs.replace(g, text=gap, summary=summary(gap)) if g.kind.startswith("class:")
                          else g for g in class_gaps]
    findings = family_gaps(family, cls)
    notes += _unread(family, family_name, cls)
    if checkout is not None and cls in NO_AUDIO_PATH and (owned := owner_config_gap(checkout, profiles)):
        findings.append(owned)
    if findings and gap:
        # What the family's files show outranks the class's template: it says what stands in the way.
        gap = f"{findings[0].text} (class {cls}: {gap})"
    manifest_gap = gap
    status, gap, probe_notes = apply_probes(status, gap, key, probes, evidence)
    notes += probe_notes
    if not gap:
        gaps: list[Gap] = []
    elif gap == manifest_gap:
        gaps = [*findings, *class_gaps]
    else:  # a live probe's reason leads; the checkout's findings still explain it
        gaps = [Gap(text=gap, summary=summary(gap), evidence=[e for e in evidence if e.claim.startswith("probe:")],
                    kind="live-probe"), *findings]
    row = CheckpointRow(
        checkpoint=normal.hf_id, revision=key[1], family=family_name, profile=normal.name, file=normal.doc.path,
        full_model_coverage=full, task_strategy=normal.task, runtime_strategy=normal.runtime,
        user_contracts=sorted({c for p in members for c in p.contracts}) if not normal.contracts
        else list(normal.contracts),
        precision=normal.precision, cache_length=normal.cache_length,
        audio_inputs=sorted(set(normal.audio_inputs)), capability_class=cls, classes_seen=classes_seen,
        status=status, gap=gap, controls=list(normal.controls), evidence=evidence,
        variants=sorted(p.name for p in members if p is not normal), candidate=candidate,
        in_audio_group=any(p.in_group for p in members), configured_as=[m.name for m in configured],
        probes=probes, accounted=cls != "unknown" or status != "unsupported", notes=notes,
        precision_source=normal.precision_source, gaps=gaps,
        l0_tier_profiles=sorted(p.name for p in members if p.l0_tier and p is not normal),
        same_clip=list(normal.same_clip), declared_tasks=list(family.support.tasks) if family and family.support else [],
        route=details.route if details else None, quality=details.quality if details else [],
        owner_gate=details.gate if details else None, blockers=details.blockers if details else [],
    )
    variants = []
    for p in sorted(members, key=lambda p: p.name):
        if p is normal:
            continue
        kinds, differs = _differences(p, normal)
        variants.append(VariantRow(
            checkpoint=normal.hf_id, revision=key[1], profile=p.name, file=p.doc.path, kinds=kinds,
            precision=p.precision, tensor_parallel=p.tensor_parallel, capability_class=p.capability,
            normal_profile=normal.name, differs=differs, context_parallel=p.context_parallel,
            ci_tier=p.l0_tier, precision_source=p.precision_source))
    return row, variants


def summary(text: str) -> str:
    """The first clause of a gap: up to its first ':' or ';' (citations and detail follow those)."""
    cut = min((i for i in (text.find(": "), text.find("; ")) if i > 0), default=len(text))
    return text[:cut]


def _manifest_status(
    cls: str, why: str, class_evidence: list[Evidence], configured: list[ConfiguredModel], evidence: list[Evidence],
    extra: str, details: CandidateDetails | None,
) -> tuple[str, str, list[Gap]]:
    """(status, gap, the class's gaps) before probes."""
    if cls != "audio-qa" or details is None:
        gap = f"{why}{extra}"
        if cls == "unknown":
            gap = f"capability unknown: {gap}; classify it by hand or add a rule"
        return "unsupported", gap, [Gap(text=gap, summary=summary(gap), evidence=class_evidence, kind=f"class:{cls}")]
    if configured:
        m = configured[0]
        evidence.append(Evidence(claim="status:planned", file=m.config_path, field=f"models[{m.index}].checkpoint",
                                 value=m.checkpoint))
        return "planned", "", []
    declared = next((f"{ev.value} ({ev.field})" for ev in class_evidence), "audio-QA")
    evidence += [Evidence(claim=f"status:blocked:{b.kind}", file=e.file, field=e.field, value=e.value)
                 for b in details.blockers for e in b.evidence]
    blocked_by = "; ".join(b.text for b in details.blockers)
    return "blocked", f"{declared} declared, but {blocked_by}", details.gaps


def apply_probes(
    status: str, gap: str, key: tuple[str, str], probes: list[ProbeOutcome], evidence: list[Evidence]
) -> tuple[str, str, list[str]]:
    """Newest run first: live evidence outranks any manifest reading; a pinned-revision mismatch is ignored."""
    notes: list[str] = []
    for probe in sorted(probes, key=lambda pr: -pr.started_ns):
        if key[1] and probe.revision and probe.revision != key[1]:
            notes.append(f"probe run {probe.run_id} tested revision {probe.revision}, not {key[1]}: ignored")
            continue
        word = _probe_status(probe)
        if not word:
            notes.append(f"probe run {probe.run_id}: {probe.model} failed at stage {probe.failed_stage or '?'}"
                         f" ({probe.reason}); no capability established")
            continue
        evidence.extend(probe.evidence)
        if probe.status == "failed":
            notes.append(f"probe run {probe.run_id}: failed at stage {probe.failed_stage}; "
                         f"earlier stages establish {word}")
        if word in ("unsupported", "blocked"):
            return word, f"live probe ({probe.run_id}): {probe.reason or 'no audio route'}", notes
        return word, "", notes
    return status, gap, notes


