"""Reconcile two inventories (an older JSON against a newer audit): checkpoints added, removed, moved in or
out of the considered list, reclassified, and Tasks renamed, with their changed structured fields.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from orchestrator.base.errors import InventoryError
from orchestrator.inventory.records import CheckpointRow, Inventory, VariantRow

__all__ = ["RowChange", "TaskRename", "RevisionDiff", "load_inventory", "diff_inventories", "diff_markdown"]


class RowChange(msgspec.Struct, frozen=True, kw_only=True):
    """One checkpoint present in both inventories: each changed field as [old, new]."""

    checkpoint: str
    in_group: bool
    changes: dict[str, list[str]]


class TaskRename(msgspec.Struct, frozen=True, kw_only=True):
    """A checkpoint whose native Task has a new name while its class stayed the same."""

    checkpoint: str
    old: str
    new: str


class RevisionDiff(msgspec.Struct, frozen=True, kw_only=True):
    """What changed between the old inventory (`old_commit`) and the new one (`new_commit`)."""

    old_file: str
    old_commit: str
    new_commit: str
    added: list[str] = []
    removed: list[str] = []
    reclassified: list[str] = []
    changed: list[RowChange] = []
    group_changed: bool = False
    # A checkpoint that was left out (considered) and is now a row, or the other way round.
    moved_in_from_considered: list[str] = []
    moved_out_to_considered: list[str] = []
    considered_added: list[str] = []
    considered_removed: list[str] = []
    tasks_renamed: list[TaskRename] = []
    notes: list[str] = []


def load_inventory(path: str | Path) -> Inventory:
    """An inventory JSON written by `aqbench inventory --json` (any schema version since 1). Blocks."""
    p = Path(path)
    try:
        return msgspec.json.decode(p.read_bytes(), type=Inventory)
    except OSError as exc:
        raise InventoryError(f"{p}: cannot read the old inventory ({exc.strerror}); --against takes the JSON "
                             "an earlier `aqbench inventory --json` wrote") from None
    except msgspec.ValidationError as exc:
        raise InventoryError(f"{p}: not an inventory JSON ({exc}); --against takes the JSON an earlier "
                             "`aqbench inventory --json` wrote") from None
    except msgspec.DecodeError as exc:
        raise InventoryError(f"{p}: not valid JSON ({exc})") from None


def _variants(inv: Inventory, checkpoint: str) -> str:
    """The checkpoint's variants by profile and axes with their values, never the phrases naming them."""
    return ", ".join(sorted(f"{v.profile} [{'; '.join(_axes(v))}]" for v in inv.variants
                            if v.checkpoint.lower() == checkpoint))


def _axes(v: VariantRow) -> list[str]:
    axes = list(v.kinds)
    if "tensor-parallel" in axes:
        axes[axes.index("tensor-parallel")] = f"TP {v.tensor_parallel}"
    if "context-parallel" in axes:
        axes[axes.index("context-parallel")] = f"CP {v.context_parallel}"
    if "precision" in axes:
        axes[axes.index("precision")] = f"precision {v.precision or '?'}"
    return axes


def _route(r: CheckpointRow) -> str:
    rt = r.route
    if rt is None:
        return ""
    return (f"{rt.precision or '?'}, TP {rt.tensor_parallel if rt.tensor_parallel is not None else '?'}, batch "
            f"{rt.batch if rt.batch is not None else '?'}, {'/'.join(rt.modes) or '?'}; paired media "
            f"{'not mapped' if rt.paired_media else '?'}")


def _fields(r: CheckpointRow, gaps: bool) -> dict[str, str]:
    out = {
        "class": r.capability_class, "status": r.status, "normal profile": r.profile, "precision": r.precision,
        "runtime": r.runtime_strategy, "revision": r.revision, "in audio group": str(r.in_audio_group).lower(),
        "owner status": "; ".join(sorted(f"{o.profile}: " + ", ".join(f"{k} {v}" for k, v in sorted(o.platforms.items()))
                                         for o in r.owner_status)),
        "blocked by": ", ".join(sorted({b.kind for b in r.blockers})), "route": _route(r),
        "recorded audio quality": "; ".join(sorted(f"{q.mode}: {q.outcome}" for q in r.quality)),
        "owners' gate": "" if r.owner_gate is None else ("yes" if r.owner_gate.exists else "no"),
    }
    if gaps:
        out["gap kinds"] = ", ".join(sorted({g.kind for g in r.gaps}))
    return out


def _has_kinds(inv: Inventory) -> bool:
    return inv.schema_version >= 3


def diff_inventories(old: Inventory, new: Inventory, old_file: str = "") -> RevisionDiff:
    """Compare rows by checkpoint id (case-insensitive), and the considered lists. Pure.

    Only structured fields are compared, never free text: a gap by its kind (not its sentence, which may quote a
    commit id), a variant by its axes and values (not the phrase naming its L0 tier), the route by its parsed limits,
    recorded quality by mode and outcome. An older inventory without gap kinds (schema < 3) is compared without gaps,
    and the diff says so. A refresh must not change the group silently: `group_changed` is true when a checkpoint of
    the audio group (or a candidate) was added, removed, moved in or out of the considered list, or changed class or
    status.
    """
    before = {r.checkpoint.lower(): r for r in old.rows}
    after = {r.checkpoint.lower(): r for r in new.rows}
    was_considered = {c.checkpoint.lower(): c for c in old.considered}
    now_considered = {c.checkpoint.lower(): c for c in new.considered}
    # In the group on either side: a checkpoint that leaves the group is a change of the group too.
    group = {k for k, r in [*before.items(), *after.items()] if r.in_audio_group or r.candidate}
    moved_in = sorted(after[k].checkpoint for k in (after.keys() - before.keys()) & was_considered.keys())
    moved_out = sorted(before[k].checkpoint for k in (before.keys() - after.keys()) & now_considered.keys())
    added = sorted(after[k].checkpoint for k in after.keys() - before.keys() - was_considered.keys())
    removed = sorted(before[k].checkpoint for k in before.keys() - after.keys() - now_considered.keys())
    compare_gaps = _has_kinds(old) and _has_kinds(new)
    notes = [] if compare_gaps else [f"gaps not compared: the old inventory (schema {old.schema_version}) has no gap "
                                     "kinds, and their sentences are not compared"]
    changed: list[RowChange] = []
    reclassified: list[str] = []
    renamed: list[TaskRename] = []
    group_changed = any(k in group for k in after.keys() ^ before.keys())
    for key in sorted(before.keys() & after.keys()):
        a, b = _fields(before[key], compare_gaps), _fields(after[key], compare_gaps)
        a["variants"], b["variants"] = _variants(old, key), _variants(new, key)
        diff = {name: [a[name], b[name]] for name in a if a[name] != b.get(name)}
        old_task, new_task = before[key].task_strategy, after[key].task_strategy
        if old_task != new_task:
            if "class" in diff:
                diff["native Task"] = [old_task, new_task]
            else:
                renamed.append(TaskRename(checkpoint=after[key].checkpoint, old=old_task, new=new_task))
        if not diff:
            continue
        if "class" in diff or "status" in diff:
            reclassified.append(after[key].checkpoint)
            group_changed = group_changed or key in group
        changed.append(RowChange(checkpoint=after[key].checkpoint, in_group=key in group, changes=diff))
    return RevisionDiff(old_file=old_file, old_commit=old.source.commit, new_commit=new.source.commit,
                        added=added, removed=removed, reclassified=reclassified, changed=changed,
                        group_changed=group_changed, moved_in_from_considered=moved_in,
                        moved_out_to_considered=moved_out,
                        considered_added=sorted(now_considered[k].checkpoint
                                                for k in now_considered.keys() - was_considered.keys() - before.keys()),
                        considered_removed=sorted(was_considered[k].checkpoint
                                                  for k in was_considered.keys() - now_considered.keys() - after.keys()),
                        tasks_renamed=renamed, notes=notes)


def _md(text: str) -> str:
    return (text or "-").replace("|", "\\|").replace("\n", " ")


def diff_markdown(diff: RevisionDiff) -> str:
    """The diff as a Markdown section for the end of the inventory report."""
    out = [f"## Reconciliation with `{diff.old_file or 'the old inventory'}` "
           f"(`{diff.old_commit[:12] or '?'}` -> `{diff.new_commit[:12] or '?'}`)", "",
           f"- group changed (exit 1): {'YES' if diff.group_changed else 'no'}",
           f"- added: {', '.join(diff.added) or 'none'}",
           f"- removed: {', '.join(diff.removed) or 'none'}",
           f"- reclassified (class or status): {', '.join(diff.reclassified) or 'none'}",
           f"- moved into the group from the considered list: {', '.join(diff.moved_in_from_considered) or 'none'}",
           f"- moved out of the group to the considered list: {', '.join(diff.moved_out_to_considered) or 'none'}",
           f"- considered list: added {', '.join(diff.considered_added) or 'none'}; removed "
           f"{', '.join(diff.considered_removed) or 'none'}",
           "- Tasks renamed (same class): " + (", ".join(f"{t.checkpoint} `{t.old}` -> `{t.new}`"
                                                          for t in diff.tasks_renamed) or "none")]
    out += [f"- note: {n}" for n in diff.notes] + [""]
    if diff.changed:
        out += ["| checkpoint | group | field | old | new |", "|---|---|---|---|---|"]
        for c in diff.changed:
            for name, (old, new) in c.changes.items():
                out.append(f"| {_md(c.checkpoint)} | {'yes' if c.in_group else 'no'} | {name} | {_md(old)} | "
                           f"{_md(new)} |")
    else:
        out.append("No checkpoint present in both changed.")
    return "\n".join(out) + "\n"
