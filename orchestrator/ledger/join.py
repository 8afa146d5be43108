"""The group ledger: inventory rows joined with run result rows, and the closing rules. Pure."""

from __future__ import annotations

from collections import Counter

import msgspec

from orchestrator.events import RunKey
from orchestrator.ledger.inventory_view import InventoryView, RowView, VariantView
from orchestrator.ledger.runs import RunEvidence
from orchestrator.reports.schema import ModelRow
from orchestrator.runkey.digests import key_changes

__all__ = ["FINAL_STATUSES", "LOAD_ONLY_COMMANDS", "Ledger", "LedgerLine", "LedgerRun", "OpenItem", "RunRowRef",
           "VariantLine", "build_ledger"]

# Statuses that end a checkpoint's story; others are stops on the way. A `failed` row is final but blocks
# closing until fixed and rerun; `unsupported`/`blocked` from a run count only with capability evidence.
FINAL_STATUSES = ("aiperf-qualified", "unsupported", "blocked", "failed")
# Runs that load a server without judging its checkpoint: listed, never a checkpoint's status.
LOAD_ONLY_COMMANDS = frozenset({"run-aiperf", "soak", "ingest"})


class RunRowRef(msgspec.Struct, frozen=True, kw_only=True):
    """One result row of one run, as the ledger cites it."""

    run_id: str
    model: str
    checkpoint: str = ""
    profile: str = ""
    revision: str = ""
    status: str = ""
    failed_stage: str = ""
    reason: str = ""
    note: str = ""


class LedgerRun(msgspec.Struct, frozen=True, kw_only=True):
    """A run the ledger read; `named` says why its rows do not count (another TRTMC revision or dataset)."""

    run_id: str
    run_dir: str
    command: str = ""
    started_at: str = ""
    status: str = ""
    server_kind: str = ""
    trtmc_revision: str = ""
    dataset_identity: str = ""
    named: list[str] = []


class LedgerLine(msgspec.Struct, frozen=True, kw_only=True):
    """One checkpoint of the group: its final status (or "" when it has none) and where it comes from."""

    checkpoint: str
    revision: str = ""
    family: str = ""
    profile: str = ""
    capability_class: str = ""
    inventory_status: str = ""
    in_scope: bool = True
    status: str = ""
    final: bool = False
    source: str = ""
    run: RunRowRef | None = None
    evidence: list[str] = []
    reason: str = ""
    blockers: list[str] = []
    other_runs: list[RunRowRef] = []


class VariantLine(msgspec.Struct, frozen=True, kw_only=True):
    """A variant profile (TP, L0/partial, other precision): listed apart, never a model."""

    checkpoint: str
    profile: str
    kinds: list[str] = []
    precision: str = ""
    normal_profile: str = ""
    runs: list[RunRowRef] = []
    differing_axis: str = ""


class OpenItem(msgspec.Struct, frozen=True, kw_only=True):
    """An audio-QA checkpoint (audio and a question in, text out) not yet qualified: what the group exists for,
    with exactly what the inventory says blocks it (route, gate, quality, config)."""

    checkpoint: str
    status: str = ""
    source: str = ""
    route: str = ""
    blocked_by: list[str] = []
    reasons: list[str] = []


class Ledger(msgspec.Struct, frozen=True, kw_only=True):
    """Can the group close? `blockers` lists every reason it cannot; `open_items` the audio-QA checkpoints not
    yet qualified (a `blocked` one is final for closing, and stays the group's open item)."""

    inventory: str = ""
    trtmc_commit: str = ""
    dataset_identity: str = ""
    runs: list[LedgerRun] = []
    lines: list[LedgerLine] = []
    variants: list[VariantLine] = []
    outside: list[RunRowRef] = []
    can_close: bool = False
    blockers: list[str] = []
    open_items: list[OpenItem] = []


def _ref(run: RunEvidence, row: ModelRow, note: str = "") -> RunRowRef:
    return RunRowRef(run_id=run.run_id, model=row.model, checkpoint=row.checkpoint, profile=row.profile,
                     revision=row.revision, status=row.status, failed_stage=row.failed_stage, reason=row.reason,
                     note=note)


def _same_commit(a: str, b: str) -> bool:
    a, b = a.removesuffix("-dirty"), b.removesuffix("-dirty")
    n = min(len(a), len(b))
    return n >= 7 and a[:n] == b[:n]


def _run_named(run: RunEvidence, inv: InventoryView, dataset: str) -> list[str]:
    named: list[str] = []
    if run.trtmc_revision and inv.trtmc_commit and not _same_commit(run.trtmc_revision, inv.trtmc_commit):
        named.append(f"made against TRTMC revision {run.trtmc_revision[:12]}, not the inventory's "
                     f"{inv.trtmc_commit[:12]}")
    elif run.server_kind == "trtmc-server" and inv.trtmc_commit and not run.trtmc_revision:
        named.append("a trtmc-server run that does not record its TRTMC revision")
    if dataset and run.dataset_identity and run.dataset_identity != dataset:
        named.append(f"another dataset identity ({run.dataset_identity[:12]}, the ledger's is {dataset[:12]})")
    return named


def _matches(row: RowView, run_row: ModelRow) -> bool:
    keys = {row.checkpoint.lower(), row.candidate.lower()} - {""}
    return bool(keys & {run_row.checkpoint.lower(), run_row.profile.lower()} - {""})


def _variant_of(row: RowView, run_row: ModelRow, variants: list[VariantView]) -> VariantView | None:
    if not run_row.profile or run_row.profile.lower() == row.profile.lower():
        return None
    return next((v for v in variants if v.profile.lower() == run_row.profile.lower()
                 and v.checkpoint.lower() in ("", row.checkpoint.lower())), None)


def _from_run(line: LedgerLine, run: RunEvidence, rr: ModelRow, row: RowView) -> LedgerLine:
    ref = _ref(run, rr)
    blockers: list[str] = []
    final = rr.status in FINAL_STATUSES
    if rr.status == "failed":
        # The owners' rule: an unresolved failure cannot close the group, with or without its reason.
        final = False
        blockers.append(f"failed at {rr.failed_stage or 'an unnamed stage'} in run {run.run_id}: "
                        f"{rr.reason or 'no reason given'}; fix it and rerun")
    elif rr.status in ("unsupported", "blocked") and not (rr.reason and any(c.evidence for c in rr.capability)):
        final = False
        blockers.append(f"run {run.run_id} says `{rr.status}` without its capability evidence"
                        + ("" if rr.reason else " or a reason"))
    elif not final:
        blockers.append(f"run {run.run_id} ended it `{rr.status}`"
                        + (f" ({rr.reason})" if rr.reason else "") + ", not a final status")
    # A row whose representative profile is partial (no full-model profile exists) or an L0 tier: a bare
    # candidate has no profile at all, and its coverage flag says nothing about what the run qualified.
    partial = (row.profile and not row.full_model_coverage) or row.tier.upper() == "L0"
    if rr.status == "aiperf-qualified" and partial:
        final = False
        blockers.append(f"qualified on an L0/partial profile ({row.profile or rr.profile}) in run {run.run_id}")
    return msgspec.structs.replace(line, status=rr.status, final=final, source=f"run {run.run_id}", run=ref,
                                   evidence=[f"{run.journal} (model {rr.model})"], reason=rr.reason,
                                   blockers=blockers)


def _from_inventory(line: LedgerLine, row: RowView) -> LedgerLine:
    evidence = [f"{e.file} {e.field}".strip() for e in row.evidence if e.file or e.field]
    if not row.accounted:
        return msgspec.structs.replace(line, status=row.status, source="inventory", evidence=evidence,
                                       blockers=[f"the inventory does not account for it: {row.gap_text}"])
    if row.status in ("unsupported", "blocked"):
        if not evidence or not row.gap_text:
            return msgspec.structs.replace(line, status=row.status, source="inventory", evidence=evidence,
                                           blockers=[f"inventory says `{row.status}` without "
                                                     + ("evidence" if not evidence else "a stated gap")])
        return msgspec.structs.replace(line, status=row.status, final=True, source="inventory", evidence=evidence,
                                       reason=row.gap_text)
    if row.status == "planned":
        what = "configured but never run"
    elif row.status in ("implemented", "family-validated", "aiperf-qualified"):
        what = f"the inventory says `{row.status}` from a probe; pass that run folder to the ledger"
    else:
        what = f"inventory status `{row.status or 'none'}` and no run"
    return msgspec.structs.replace(line, source="inventory", evidence=evidence, blockers=[f"unrun: {what}"])


def _current(eligible: list[tuple[RunEvidence, ModelRow]],
             keys: dict[str, RunKey]) -> tuple[list[tuple[RunEvidence, ModelRow]], list[RunRowRef]]:
    """The rows made under the current key, and the others named stale with what changed. The current key
    is the configured model's (`keys`), else the newest keyed row's; with neither, every row counts."""
    current = next((keys[rr.model] for _, rr in eligible if rr.model in keys), None)
    current = current or next((rr.keyed_by for _, rr in eligible if rr.keyed_by is not None), None)
    if current is None:
        return eligible, []
    kept, stale = [], []
    for run, rr in eligible:
        changes = key_changes(rr.keyed_by, current)
        if changes:
            stale.append(_ref(run, rr, note=f"stale, not counted: run key {rr.keyed_by.digest if rr.keyed_by else 'none'} is "
                                            f"not the current {current.digest}: {'; '.join(changes)}"))
        else:
            kept.append((run, rr))
    return kept, stale


def build_ledger(inv: InventoryView, runs: list[RunEvidence], *, dataset_identity: str = "",
                 keys: dict[str, RunKey] | None = None) -> Ledger:
    """Join `inv` with every result row of `runs` (newest run first wins) and apply the closing rules.

    `dataset_identity` pins the ledger's dataset; by default it is the identity most rows used. `keys`
    (model name -> run key now, orchestrator/runkey/current.py) decide which rows are current.

    A checkpoint's final status comes from its newest eligible run row (same TRTMC revision and dataset identity as
    the ledger, the checkpoint's normal profile, and the current run key: the configured model's key now when given,
    else the newest keyed row's; any other row is named stale with what changed), else from the inventory's own
    evidence-backed `unsupported`/`blocked` verdict. The group can close only when every in-scope checkpoint has a
    final status backed by evidence and none is unrun, failed (an unresolved failure blocks until fixed and rerun), or
    qualified on an L0/partial profile. Variants are listed apart and never counted as models.
    """
    runs = sorted(runs, key=lambda r: -r.started_unix_ns)
    if not dataset_identity:
        counts = Counter(r.dataset_identity for r in runs for _ in r.report.rows if r.dataset_identity)
        dataset_identity = counts.most_common(1)[0][0] if counts else ""
    named = {r.run_id: _run_named(r, inv, dataset_identity) for r in runs}
    used: set[tuple[str, str]] = set()
    variant_runs: dict[str, list[RunRowRef]] = {}
    lines: list[LedgerLine] = []
    for row in inv.rows:
        line = LedgerLine(checkpoint=row.checkpoint, revision=row.revision, family=row.family, profile=row.profile,
                          capability_class=row.klass, inventory_status=row.status, in_scope=row.in_scope)
        eligible: list[tuple[RunEvidence, ModelRow]] = []
        others: list[RunRowRef] = []
        for run in runs:
            for rr in run.report.rows:
                if not _matches(row, rr):
                    continue
                used.add((run.run_id, rr.model))
                if run.command in LOAD_ONLY_COMMANDS:
                    others.append(_ref(run, rr, note=f"not counted: `{run.command}` measures load, it does "
                                                     "not qualify"))
                elif (variant := _variant_of(row, rr, inv.variants)) is not None:
                    variant_runs.setdefault(variant.profile, []).append(_ref(run, rr))
                elif named[run.run_id]:
                    others.append(_ref(run, rr, note="not counted: " + "; ".join(named[run.run_id])))
                elif row.revision and rr.revision and rr.revision != row.revision:
                    others.append(_ref(run, rr, note=f"not counted: tested revision {rr.revision}, "
                                                     f"the inventory row is {row.revision}"))
                else:
                    eligible.append((run, rr))
        eligible, stale = _current(eligible, keys or {})
        others += stale
        # Newest final row wins; an interrupted newer run does not undo an older final result.
        chosen = next((e for e in eligible if e[1].status in FINAL_STATUSES), eligible[0] if eligible else None)
        for entry in eligible:
            if chosen is not None and entry is not chosen:
                newer = entry[0].started_unix_ns > chosen[0].started_unix_ns
                others.append(_ref(*entry, note=f"newer, without a final status; run {chosen[0].run_id} counts"
                                   if newer else f"superseded by run {chosen[0].run_id}"))
        line = _from_run(line, *chosen, row) if chosen else _from_inventory(line, row)
        if chosen is None and stale and not line.final:
            line = msgspec.structs.replace(line, blockers=[f"only stale rows (run {stale[0].run_id}: "
                                                           f"{stale[0].note.split(': ', 1)[1]}); rerun it",
                                                           *(b for b in line.blockers if not b.startswith("unrun:"))])
        partial_only = [v for v in inv.variants if v.checkpoint.lower() == row.checkpoint.lower() and v.partial
                        and any(r.status == "aiperf-qualified" for r in variant_runs.get(v.profile, []))]
        if partial_only and not line.final:
            line = msgspec.structs.replace(line, blockers=[*line.blockers, ("qualified only on the L0/partial "
                                                           f"profile {partial_only[0].profile}")])
        lines.append(msgspec.structs.replace(line, other_runs=others))
    variants = [VariantLine(checkpoint=v.checkpoint, profile=v.profile, kinds=list(v.kinds), precision=v.precision,
                            normal_profile=v.normal_profile, runs=variant_runs.get(v.profile, []),
                            differing_axis=v.differing_axis)
                for v in inv.variants]
    outside = [_ref(run, rr, note="matches no checkpoint of the inventory")
               for run in runs for rr in run.report.rows if (run.run_id, rr.model) not in used]
    blockers = [f"{ln.checkpoint}: {b}" for ln in lines if ln.in_scope for b in ln.blockers]
    blockers += [f"{ln.checkpoint}: no final status" for ln in lines if ln.in_scope and not ln.final
                 and not ln.blockers]
    blockers += [f"inventory: unreadable manifest {e.get('file', '?')}: {e.get('error', '')}"
                 if isinstance(e, dict) else f"inventory: unreadable manifest {e}" for e in inv.errors]
    ledger_runs = [LedgerRun(run_id=r.run_id, run_dir=r.run_dir, command=r.command, started_at=r.started_at,
                             status=r.report.provenance.status, server_kind=r.server_kind,
                             trtmc_revision=r.trtmc_revision, dataset_identity=r.dataset_identity,
                             named=named[r.run_id]) for r in runs]
    return Ledger(inventory=inv.path, trtmc_commit=inv.trtmc_commit, dataset_identity=dataset_identity,
                  runs=ledger_runs, lines=lines, variants=variants, outside=outside, can_close=not blockers,
                  blockers=blockers, open_items=_open_items(inv, lines))


def _open_items(inv: InventoryView, lines: list[LedgerLine]) -> list[OpenItem]:
    """In-scope audio-QA checkpoints that no run qualified, each with the inventory's blockers."""
    rows = {r.checkpoint: r for r in inv.rows}
    out = []
    for ln in lines:
        row = rows.get(ln.checkpoint)
        if row is None or not ln.in_scope or ln.capability_class != "audio-qa" or ln.status == "aiperf-qualified":
            continue
        reasons = [f"{b.kind}: {b.text}" for b in row.blockers] or [*ln.blockers] or [ln.reason or row.gap_text]
        out.append(OpenItem(checkpoint=ln.checkpoint, status=ln.status or row.status, source=ln.source,
                            route=row.route.text() if row.route else "",
                            blocked_by=list(dict.fromkeys(b.kind for b in row.blockers)), reasons=reasons))
    return out
