"""The audit: every manifest and family source of a checkout into an Inventory, matched with bench.toml.

Pure; never raises on data (a bad manifest is an ErrorRow).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import msgspec

from orchestrator.inventory.candidate import Checkout
from orchestrator.inventory.considered import considered
from orchestrator.inventory.families import FamilyFacts, family_facts
from orchestrator.inventory.manifests import ManifestError, parse_manifest
from orchestrator.inventory.matrix import read_support_matrix
from orchestrator.inventory.named_rows import candidate_row, declared_row, near
from orchestrator.inventory.owners import read_owner_configs
from orchestrator.inventory.precision import precision_default
from orchestrator.inventory.profile import Profile
from orchestrator.inventory.records import (
    CheckpointRow,
    CodeSources,
    ConfiguredModel,
    ErrorRow,
    Evidence,
    FamilyNote,
    Inventory,
    ManifestDocument,
    ProbeOutcome,
    Reconciliation,
    SourceDocument,
    TaskSeen,
    TreeSource,
    VariantRow,
)
from orchestrator.inventory.route import read_route
from orchestrator.inventory.rows import checkpoint_row, checkpoints, family_defaults, match
from orchestrator.inventory.task_names import speaks_of_audio, task_class
from orchestrator.inventory.tasks import Declared, declarations, tasks_seen

__all__ = ["audit"]


def audit(
    documents: Iterable[ManifestDocument],
    *,
    source: TreeSource,
    candidates: Sequence[str] = (),
    models: Sequence[ConfiguredModel] = (),
    probes: Sequence[ProbeOutcome] = (),
    config_path: str = "",
    task_sources: Iterable[SourceDocument] = (),
    code: CodeSources = CodeSources(),
) -> Inventory:
    """Audit manifest documents into one row per checkpoint of the audio group. Pure; never raises on data.

    Args:
        documents: every manifest found in the tree, in either layout.
        candidates: bench.toml `[inventory] candidates` (Hugging Face ids or profile names), always included.
        models: bench.toml `[[models]]`, for `planned` and the reconciliation.
        probes: outcomes of `qualify` runs (probes.read_probes).
        task_sources: the families' own files (tree.read_task_sources): support.py Tasks and default precision,
            build and runtime code, READMEs, the family's qualification files. A checkpoint no manifest names
            but whose family declares and binds an audio-QA Task gets a row.
        code: the checkout-wide files (tree.read_code_sources): precision defaults, the older layout's code,
            the support matrix, the served chat schema, the owners' qualification config, the Task SDK.
    """
    docs = sorted(documents, key=lambda d: d.path)
    profiles, errors = _profiles(docs)
    families = family_facts(task_sources, code.family_code)
    default, default_evidence = precision_default(code.precision_defaults)
    for p in profiles:
        facts = _family_of(p, families)
        _resolve_precision(p, default, default_evidence, facts.default_precision() if facts else None)
    owner = read_support_matrix(code.support_matrix)
    owners = read_owner_configs(code.owner_tasks, code.owner_models,
                                [q for f in families.values() for q in f.qualification], code.qualification_scheme)
    checkout = Checkout(route=read_route(code.server_schema), owners=owners)
    groups = checkpoints(profiles)
    candidate_hits: dict[str, tuple[str, str]] = {}
    for cand in candidates:
        for key, members in groups.items():
            if match(cand, key[0], (p.name for p in members)):
                candidate_hits.setdefault(cand, key)
    used = _Uses(models=models, probes=probes)
    rows, variants, outside_configured = _manifest_rows(groups, family_defaults(profiles), candidate_hits, used,
                                                        families, checkout)
    declared, notes = declarations(families)
    rows += _declared_rows(declared, {key[0] for key in groups}, candidates, candidate_hits, used, families,
                           checkout)
    for cand in candidates:
        if cand in candidate_hits:
            continue
        configured = [m for m in models if match(m.checkpoint, cand, ()) or m.profile.lower() == cand.lower()]
        used.models_seen.update(m.name for m in configured)
        matched = [pr for pr in probes if match(pr.checkpoint, cand, ()) or pr.profile.lower() == cand.lower()]
        used.probes_seen.update(id(pr) for pr in matched)
        rows.append(candidate_row(cand, configured, matched, source, near(cand, groups)))
    reconciliation = Reconciliation(
        config_path=config_path,
        group_missing_from_config=[f"{r.checkpoint}@{r.revision}" if r.revision else r.checkpoint
                                   for r in rows if r.file and not r.configured_as],
        configured_absent_from_checkout=[f"{m.name} ({m.checkpoint})" for m in models
                                         if m.name not in used.models_seen],
        configured_outside_group=outside_configured,
        probes_unmatched=[f"{pr.model} ({pr.checkpoint}) in {pr.run_dir}" for pr in probes
                          if id(pr) not in used.probes_seen],
    )
    rows = [msgspec.structs.replace(r, owner_status=owner.get(r.checkpoint.lower(), [])) for r in rows]
    left_out = considered(profiles, {r.checkpoint.lower() for r in rows})
    # A family a declaration note already explains needs no second note for having no manifest.
    notes += _family_notes(families, {p.doc.family_dir for p in profiles} | {p.family for p in profiles},
                           set(declared) | {n.family for n in notes})
    seen = tasks_seen(_task_names(profiles, families, checkout), code.task_sdk)
    unaccounted = _unaccounted(errors, rows, notes, seen, checkout)
    layout, layout_evidence = _layout(docs, families, code)
    return Inventory(
        source=source, layouts_found=sorted({d.layout for d in docs}), manifests_scanned=len(docs),
        manifests_in_group=sum(1 for p in profiles if p.in_group), rows=rows, variants=variants, errors=errors,
        reconciliation=reconciliation, accounted=not unaccounted, unaccounted=unaccounted, considered=left_out,
        precision_default=default_evidence[0] if default else None, layout=layout, layout_evidence=layout_evidence,
        served_route=checkout.route, tasks_seen=seen, family_notes=notes,
    )


def _profiles(docs: Sequence[ManifestDocument]) -> tuple[list[Profile], list[ErrorRow]]:
    """The manifests that name a checkpoint, and an error row for each that cannot be read or named."""
    errors: list[ErrorRow] = []
    profiles: list[Profile] = []
    for doc in docs:
        try:
            p = parse_manifest(doc)
        except ManifestError as exc:
            errors.append(ErrorRow(file=doc.path, layout=doc.layout, error=str(exc)))
            continue
        if not p.hf_id:
            if p.in_group:
                errors.append(ErrorRow(file=doc.path, layout=doc.layout,
                                       error="audio-conditioned manifest without hf_id: cannot name its checkpoint"))
            continue
        profiles.append(p)
    return profiles, errors


def _family_of(p: Profile, families: dict[str, FamilyFacts]) -> FamilyFacts | None:
    return families.get(p.doc.family_dir) or families.get(p.family)


@dataclass
class _Uses:
    """bench.toml models and qualify probes matched to checkpoints, remembering which were used."""

    models: Sequence[ConfiguredModel]
    probes: Sequence[ProbeOutcome]
    models_seen: set[str] = field(default_factory=set)
    probes_seen: set[int] = field(default_factory=set)  # ids: probes are not hashable

    def configured_for(self, hf_id: str, names: Iterable[str]) -> list[ConfiguredModel]:
        names = list(names)
        found = [m for m in self.models if match(m.checkpoint, hf_id, ()) or (m.profile and m.profile in names)]
        self.models_seen.update(m.name for m in found)
        return found

    def probes_for(self, hf_id: str, names: Iterable[str]) -> list[ProbeOutcome]:
        names = list(names)
        found = [pr for pr in self.probes if match(pr.checkpoint, hf_id, ()) or (pr.profile and pr.profile in names)]
        self.probes_seen.update(id(pr) for pr in found)
        return found


def _manifest_rows(groups: dict[tuple[str, str], list[Profile]], defaults: dict[str, str],
                   candidate_hits: dict[str, tuple[str, str]], used: _Uses, families: dict[str, FamilyFacts],
                   checkout: Checkout) -> tuple[list[CheckpointRow], list[VariantRow], list[str]]:
    """A row per checkpoint the manifests name in the audio group (or a candidate names), its variants, and the
    configured models whose checkpoint lies outside the group."""
    by_key_candidate = {key: cand for cand, key in candidate_hits.items()}
    rows: list[CheckpointRow] = []
    variants: list[VariantRow] = []
    outside_configured: list[str] = []
    for key in sorted(groups):
        members = groups[key]
        names = [p.name for p in members]
        configured = used.configured_for(key[0], names)
        if not any(p.in_group for p in members) and key not in by_key_candidate:
            outside_configured += [f"{m.name} ({m.checkpoint})" for m in configured]
            continue
        matched = used.probes_for(key[0], names)
        row, vrows = checkpoint_row(key, members, defaults, candidate=by_key_candidate.get(key, ""),
                                    configured=configured, probes=matched, family=_family_of(members[0], families),
                                    checkout=checkout)
        rows.append(row)
        variants += vrows
    return rows, variants, outside_configured


def _declared_rows(declared: dict[str, Declared], manifest_ids: set[str], candidates: Sequence[str],
                   candidate_hits: dict[str, tuple[str, str]], used: _Uses, families: dict[str, FamilyFacts],
                   checkout: Checkout) -> list[CheckpointRow]:
    """A row per checkpoint a family declares and binds to an audio-QA Task but no manifest names."""
    rows: list[CheckpointRow] = []
    for fam in declared.values():
        for hf_id in sorted(fam.named):
            if hf_id.lower() in manifest_ids:
                continue  # its manifests already make its row
            cand = next((c for c in candidates if c not in candidate_hits and match(c, hf_id, ())), "")
            if cand:
                candidate_hits[cand] = (hf_id.lower(), "")
            configured = used.configured_for(hf_id, ())
            matched = used.probes_for(hf_id, ())
            rows.append(declared_row(hf_id, fam, candidate=cand, configured=configured, probes=matched,
                                     family=families[fam.family], checkout=checkout))
    return rows


def _unaccounted(errors: Sequence[ErrorRow], rows: Sequence[CheckpointRow], notes: Sequence[FamilyNote],
                 seen: Sequence[TaskSeen], checkout: Checkout) -> list[str]:
    """What a person must still look at: unreadable manifests, rows and notes with a gap, unclassified Tasks,
    an unreadable served route, the owners' unreadable files."""
    unaccounted = [f"{e.file}: {e.error}" for e in errors]
    unaccounted += [f"{r.checkpoint}: {r.gap}" for r in rows if not r.accounted]
    unaccounted += [f"families/{n.family}: {n.text}" for n in notes if not n.accounted]
    unaccounted += [f"Task `{t.task}` ({t.evidence[0].file} {t.evidence[0].field}) speaks of audio but is not in the "
                    f"inventory's Task list: a person must classify it" for t in seen if t.flagged]
    route = checkout.route
    if route.present and route.accepts_audio is None:
        unaccounted.append(f"{route.file}: {route.error}")
    unaccounted += checkout.owners.errors
    return unaccounted


def _resolve_precision(p: Profile, default: str, evidence: list[Evidence], family_default: Evidence | None) -> None:
    """The profile's effective precision: declared, else its family's support.py default, else TRTMC's
    harness default for an omitted one (cited)."""
    if p.precision:
        p.precision_source = p.evidence["precision"][0]
        return
    if family_default is not None:
        p.precision = str(family_default.value)
        p.precision_source = Evidence(claim="family_default_precision", file=family_default.file,
                                      field=family_default.field, value=f"{p.precision} (manifest names no precision)")
    elif default:
        p.precision = default
        cite = evidence[0]
        p.precision_source = Evidence(claim="precision_default", file=cite.file, field=cite.field,
                                      value=f"{default} (manifest names no precision)")
    else:
        return
    p.evidence.setdefault("precision", []).append(p.precision_source)


def _family_notes(families: dict[str, FamilyFacts], with_manifests: set[str], explained: set[str]) -> list[FamilyNote]:
    """What a family shows beyond its rows: a support.py or build file the audit could not read, and a family
    with no manifest (accounted only when its readable Tasks neither take nor make audio)."""
    notes: list[FamilyNote] = []
    for name, facts in sorted(families.items()):
        support = facts.support
        if support is not None and support.error:
            notes.append(FamilyNote(family=name, accounted=False, evidence=[Evidence(claim="support", file=support.file,
                                    field="(whole file)", value=support.error)],
                                    text=f"{support.file} {support.error}: its Tasks cannot be told"))
        notes += [FamilyNote(family=name, accounted=False, text=f"{u}: what it builds cannot be read")
                  for u in facts.code.unreadable]
        if name in with_manifests or name in explained or (support is None and not facts.code.build_files):
            continue
        tasks = list(dict.fromkeys(t.task for t in (support.tasks if support else [])))
        audio = [t for t in tasks if task_class(t) or speaks_of_audio(t)]
        cites = [Evidence(claim="task_declared", file=t.file, field=f"line {t.line}", value=t.task)
                 for t in (support.tasks if support else [])][:3]
        if tasks and not audio:
            notes.append(FamilyNote(family=name, evidence=cites, text=(
                f"no manifest; declares {', '.join(f'`{t}`' for t in tasks)}: no audio Task, outside the audio group")))
        elif tasks:
            notes.append(FamilyNote(family=name, accounted=False, evidence=cites, text=(
                f"no manifest names a checkpoint of it, yet it declares {', '.join(f'`{t}`' for t in audio)}: its "
                f"checkpoints cannot be audited")))
        elif support is None:
            notes.append(FamilyNote(family=name, accounted=False, text=(
                f"has build or runtime files ({(facts.code.build_files or facts.code.runtime_files)[0]}) but no "
                f"manifest and no support.py: what it serves cannot be told")))
    return notes


def _task_names(profiles: Sequence[Profile], families: dict[str, FamilyFacts], checkout: Checkout) -> list[Evidence]:
    """Every Task name the checkout uses, where it is used (the Task SDK is read by `tasks_seen`)."""
    out = [ev for p in profiles for ev in p.evidence.get("task_strategy", [])[:1]]
    for facts in families.values():
        out += [Evidence(claim="task_declared", file=t.file, field=f"line {t.line}", value=t.task)
                for t in (facts.support.tasks if facts.support else [])]
        out += facts.code.bound
    out += list(checkout.owners.tasks.values())
    return out


def _layout(docs: Sequence[ManifestDocument], families: dict[str, FamilyFacts],
            code: CodeSources) -> tuple[str, list[Evidence]]:
    """Which layout the checkout has, with the first file of each that shows it."""
    evidence: list[Evidence] = []
    for layout in ("families", "tests/e2e/models"):
        if first := next((d for d in docs if d.layout == layout), None):
            evidence.append(Evidence(claim=f"layout:{layout}", file=first.path, field="manifest", value=layout))
    if support := next((f.support for _, f in sorted(families.items()) if f.support), None):
        evidence.append(Evidence(claim="layout:families", file=support.file, field="support.py", value="families"))
    if code.family_code:
        evidence.append(Evidence(claim="layout:tests/e2e/models", file=code.family_code[0].path,
                                 field="build or runtime code", value="tests/e2e/models"))
    found = sorted({str(e.value) for e in evidence})
    return ("both" if len(found) == 2 else found[0] if found else "none"), evidence
