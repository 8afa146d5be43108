"""TRTMC's qualification files (tasks.yaml, a profile's exceptions) as the owners' gates read them, from a checkout.
Apart from wiring.py so that the commands without owners' gates (run-aiperf, sweep, ab, soak) load neither the
inventory's tree readers nor YAML."""

from __future__ import annotations

from pathlib import Path

from adapters.trtmc.qual_files import MODELS_DIR, TASKS_FILE, parse_owner_files
from orchestrator.config import Config
from orchestrator.inventory.tree import open_checkout, read_checkout_files
from orchestrator.spine.ports import OwnerFiles

__all__ = ["owner_files", "read_owner_files"]


def read_owner_files(checkout: str | Path, profile: str, revision: str = "") -> OwnerFiles:
    """The owners' tasks.yaml and the profile's exceptions from a checkout, read as the inventory reads it:
    the working tree, `revision` through git, or a bare repository at its HEAD. The revision cited is the
    resolved commit, HEAD with `+worktree` for a working tree, or `unversioned` outside git. Raises
    InventoryError (folder, revision) or ConfigError (no tasks.yaml there, naming the revision). Blocks."""
    source = open_checkout(checkout, revision)
    profile_rel = f"{MODELS_DIR}/{profile}.yaml" if profile else ""
    found = read_checkout_files(source, [TASKS_FILE, *([profile_rel] if profile_rel else [])])
    if source.read_via == "git":
        cited = source.commit
        where = f"{source.root} at {source.commit[:12]}" + (f" ({revision})" if revision else " (HEAD of a bare repository)")
    else:
        cited = f"{source.commit}+worktree" if source.commit else "unversioned"
        where = f"{source.root} (working tree{f' on {source.commit[:12]}' if source.commit else ''})"
    return parse_owner_files(found.get(TASKS_FILE), found.get(profile_rel) if profile_rel else None, profile=profile,
                             revision=cited, where=where)


def owner_files(cfg: Config, trtmc: str = "", rev: str = "") -> dict[str, OwnerFiles]:
    """TRTMC's qualification files for each model judged by the owners' gates: every model with a reference
    when `trtmc` is given, else each whose noninferiority table names a `source`. Blocks (reads, git)."""
    out: dict[str, OwnerFiles] = {}
    for model in cfg.models:
        ni = model.correctness.noninferiority
        source = trtmc if model.reference is not None else ""
        source = source or (ni.source if ni is not None else "")
        if source:
            revision = rev if trtmc else (ni.revision if ni is not None else "")
            out[model.name] = read_owner_files(source, model.profile, revision)
    return out


