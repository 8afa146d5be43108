"""The audit: every manifest and family source of a checkout into an Inventory, matched with bench.toml.

Pure; never raises on data (a bad manifest is an ErrorRow).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from orchestrator.inventory.considered import considered
from orchestrator.inventory.findings import code_gaps
from orchestrator.inventory.manifests import ManifestError, parse_manifest
from orchestrator.inventory.matrix import read_support_matrix
from orchestrator.inventory.precision import precision_default
from orchestrator.inventory.profile import Profile
from orchestrator.inventory.records import (
    CheckpointRow,
    CodeSources,
    ConfiguredModel,
    ErrorRow,
    Evidence,
    Inventory,
    ManifestDocument,
    ProbeOutcome,
    Reconciliation,
    SourceDocument,
    TreeSource,
    VariantRow,
)
from orchestrator.inventory.rows import (
    candidate_row,
    checkpoint_row,
    checkpoints,
    declared_row,
    family_defaults,
    match,
    near,
)
from orchestrator.inventory.tasks import declarations

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
        task_sources: the families' support.py, runtime and README files (tree.read_task_sources):
            a checkpoint no manifest names but whose family declares and binds an audio-QA Task gets a row.
        code: precision-default files, family build/runtime code and the support matrix
            (tree.read_code_sources): effective precision, gaps with citations, the owners' status.
    """
    docs = sorted(documents, key=lambda d: d.path)
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
    default, default_evidence = precision_default(code.precision_defaults)
    for p in profiles:
        _resolve_precision(p, default, default_evidence)
    findings = code_gaps(code.family_code)
    owner = read_support_matrix(code.support_matrix)
    defaults = family_defaults(profiles)
    groups = checkpoints(profiles)
    candidate_hits: dict[str, tuple[str, str]] = {}
    for cand in candidates:
        for key, members in groups.items():
            if match(cand, key[0], (p.name for p in members)):
                candidate_hits.setdefault(cand, key)
    by_key_candidate = {key: cand for cand, key in candidate_hits.items()}

    def configured_for(hf_id: str, names: Iterable[str]) -> list[ConfiguredModel]:
        names = list(names)
        return [m for m in models if match(m.checkpoint, hf_id, ()) or (m.profile and m.profile in names)]

    def probes_for(hf_id: str, names: Iterable[str]) -> list[ProbeOutcome]:
        names = list(names)
        return [pr for pr in probes if match(pr.checkpoint, hf_id, ()) or (pr.profile and pr.profile in names)]

    rows: list[CheckpointRow] = []
    variants: list[VariantRow] = []
    used_models: set[str] = set()
    used_probes: set[int] = set()
    outside_configured: list[str] = []
    for key in sorted(groups):
        members = groups[key]
        names = [p.name for p in members]
        configured = configured_for(key[0], names)
        in_group = any(p.in_group for p in members)
        used_models.update(m.name for m in configured)
        if not in_group and key not in by_key_candidate:
            outside_configured += [f"{m.name} ({m.checkpoint})" for m in configured]
            continue
        matched = probes_for(key[0], names)
        used_probes.update(id(pr) for pr in matched)
        family = findings.get(members[0].family) or findings.get(members[0].doc.family_dir, [])
        row, vrows = checkpoint_row(key, members, defaults, candidate=by_key_candidate.get(key, ""),
                                    configured=configured, probes=matched, findings=family)
        rows.append(row)
        variants += vrows
    manifest_ids = {key[0] for key in groups}
    for fam in declarations(task_sources).values():
        for hf_id in sorted(fam.named):
            if hf_id.lower() in manifest_ids:
                continue  # its manifests already make its row
            cand = next((c for c in candidates if c not in candidate_hits and match(c, hf_id, ())), "")
            if cand:
                candidate_hits[cand] = (hf_id.lower(), "")
            configured = configured_for(hf_id, ())
            used_models.update(m.name for m in configured)
            matched = probes_for(hf_id, ())
            used_probes.update(id(pr) for pr in matched)
            rows.append(declared_row(hf_id, fam, candidate=cand, configured=configured, probes=matched))
    for cand in candidates:
        if cand in candidate_hits:
            continue
        configured = [m for m in models if match(m.checkpoint, cand, ()) or m.profile.lower() == cand.lower()]
        used_models.update(m.name for m in configured)
        matched = [pr for pr in probes if match(pr.checkpoint, cand, ()) or pr.profile.lower() == cand.lower()]
        used_probes.update(id(pr) for pr in matched)
        rows.append(candidate_row(cand, configured, matched, source, near(cand, groups)))
    reconciliation = Reconciliation(
        config_path=config_path,
        group_missing_from_config=[f"{r.checkpoint}@{r.revision}" if r.revision else r.checkpoint
                                   for r in rows if r.file and not r.configured_as],
        configured_absent_from_checkout=[f"{m.name} ({m.checkpoint})" for m in models if m.name not in used_models],
        configured_outside_group=outside_configured,
        probes_unmatched=[f"{pr.model} ({pr.checkpoint}) in {pr.run_dir}" for pr in probes
                          if id(pr) not in used_probes],
    )
    rows = [msgspec.structs.replace(r, owner_status=owner.get(r.checkpoint.lower(), [])) for r in rows]
    left_out = considered(profiles, {r.checkpoint.lower() for r in rows})
    unaccounted = [f"{e.file}: {e.error}" for e in errors]
    unaccounted += [f"{r.checkpoint}: {r.gap}" for r in rows if not r.accounted]
    return Inventory(
        source=source, layouts_found=sorted({d.layout for d in docs}), manifests_scanned=len(docs),
        manifests_in_group=sum(1 for p in profiles if p.in_group), rows=rows, variants=variants, errors=errors,
        reconciliation=reconciliation, accounted=not unaccounted, unaccounted=unaccounted, considered=left_out,
        precision_default=default_evidence[0] if default else None,
    )


def _resolve_precision(p: Profile, default: str, evidence: list[Evidence]) -> None:
    """The profile's effective precision: declared, else TRTMC's default for an omitted one (cited)."""
    if p.precision:
        p.precision_source = p.evidence["precision"][0]
    elif default:
        p.precision = default
        cite = evidence[0]
        p.precision_source = Evidence(claim="precision_default", file=cite.file, field=cite.field,
                                      value=f"{default} (manifest names no precision)")
        p.evidence.setdefault("precision", []).append(p.precision_source)
