"""Reconcile two inventories (an older JSON against a newer audit): checkpoints added, removed and
reclassified, with their changed profiles, precisions, Tasks, gaps and variants.

A refresh must not change the group silently: `group_changed` is true when a checkpoint of the audio
group (or a candidate) was added, removed, or changed class or status.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from orchestrator.errors import InventoryError
from orchestrator.inventory.records import CheckpointRow, Inventory, VariantRow

__all__ = ["RowChange", "RevisionDiff", "load_inventory", "diff_inventories", "diff_markdown"]


class RowChange(msgspec.Struct, frozen=True, kw_only=True):
    """One checkpoint present in both inventories: each changed field as [old, new]."""

    checkpoint: str
    in_group: bool
    changes: dict[str, list[str]]


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
    return ", ".join(sorted(f"{v.profile} [{'; '.join(_axes(v))}]" for v in inv.variants
                            if v.checkpoint.lower() == checkpoint))


def _axes(v: VariantRow) -> list[str]:
    return v.differs or v.kinds  # schema 1 had kinds only


def _fields(r: CheckpointRow) -> dict[str, str]:
    return {
        "class": r.capability_class, "status": r.status, "normal profile": r.profile, "precision": r.precision,
        "native Task": r.task_strategy, "runtime": r.runtime_strategy, "revision": r.revision,
        "gap": r.gap, "in audio group": str(r.in_audio_group).lower(),
        "owner status": "; ".join(f"{o.profile}: " + ", ".join(f"{k} {v}" for k, v in o.platforms.items())
                                  for o in r.owner_status),
    }


def diff_inventories(old: Inventory, new: Inventory, old_file: str = "") -> RevisionDiff:
    """Compare rows by checkpoint id (case-insensitive). Pure."""
    before = {r.checkpoint.lower(): r for r in old.rows}
    after = {r.checkpoint.lower(): r for r in new.rows}
    # In the group on either side: a checkpoint that leaves the group is a change of the group too.
    group = {k for k, r in [*before.items(), *after.items()] if r.in_audio_group or r.candidate}
    added = sorted(after[k].checkpoint for k in after.keys() - before.keys())
    removed = sorted(before[k].checkpoint for k in before.keys() - after.keys())
    changed: list[RowChange] = []
    reclassified: list[str] = []
    group_changed = any(k in group for k in after.keys() ^ before.keys())
    for key in sorted(before.keys() & after.keys()):
        a, b = _fields(before[key]), _fields(after[key])
        a["variants"], b["variants"] = _variants(old, key), _variants(new, key)
        diff = {name: [a[name], b[name]] for name in a if a[name] != b[name]}
        if not diff:
            continue
        if "class" in diff or "status" in diff:
            reclassified.append(after[key].checkpoint)
            group_changed = group_changed or key in group
        changed.append(RowChange(checkpoint=after[key].checkpoint, in_group=key in group, changes=diff))
    return RevisionDiff(old_file=old_file, old_commit=old.source.commit, new_commit=new.source.commit,
                        added=added, removed=removed, reclassified=reclassified, changed=changed,
                        group_changed=group_changed)


def _md(text: str) -> str:
    return (text or "-").replace("|", "\\|").replace("\n", " ")


def diff_markdown(diff: RevisionDiff) -> str:
    """The diff as a Markdown section for the end of the inventory report."""
    out = [f"## Reconciliation with `{diff.old_file or 'the old inventory'}` "
           f"(`{diff.old_commit[:12] or '?'}` -> `{diff.new_commit[:12] or '?'}`)", "",
           f"- group changed (exit 1): {'YES' if diff.group_changed else 'no'}",
           f"- added: {', '.join(diff.added) or 'none'}",
           f"- removed: {', '.join(diff.removed) or 'none'}",
           f"- reclassified (class or status): {', '.join(diff.reclassified) or 'none'}", ""]
    if diff.changed:
        out += ["| checkpoint | group | field | old | new |", "|---|---|---|---|---|"]
        for c in diff.changed:
            for name, (old, new) in c.changes.items():
                out.append(f"| {_md(c.checkpoint)} | {'yes' if c.in_group else 'no'} | {name} | {_md(old)} | "
                           f"{_md(new)} |")
    else:
        out.append("No checkpoint present in both changed.")
    return "\n".join(out) + "\n"
