"""Read TRTMC's qualification files (apps/aiperf_qual/config) from a checkout, at a revision or as checked out.

Reads only: tasks.yaml and config/models/<profile>.yaml, parsed with PyYAML's safe loader. Blocks (file
reads, `git show`); nothing here decides a gate (orchestrator/judge/owners.py does).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from orchestrator.errors import ConfigError
from orchestrator.ports import OwnerFiles

__all__ = ["TASKS_FILE", "MODELS_DIR", "read_owner_files"]

TASKS_FILE = "apps/aiperf_qual/config/tasks.yaml"
MODELS_DIR = "apps/aiperf_qual/config/models"
_GIT_TIMEOUT_S = 30.0


def _git(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True,
                          timeout=_GIT_TIMEOUT_S, check=False)


def _text(checkout: Path, rel: str, revision: str) -> str | None:
    """The file's text at `revision` (git) or in the working tree; None when it does not exist there."""
    if revision:
        shown = _git(checkout, "show", f"{revision}:{rel}")
        return shown.stdout if shown.returncode == 0 else None
    path = checkout / rel
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected a mapping at the top, got {type(doc).__name__}")
    return doc


def read_owner_files(checkout: str | Path, profile: str, revision: str = "") -> OwnerFiles:
    """tasks.yaml and the profile's exceptions file (absent = none) from `checkout` at `revision`.

    The revision cited is the resolved commit (`git rev-parse`), or the checkout's HEAD with `+worktree`
    when read from the working tree, or `unversioned` outside git. Raises ConfigError naming the path.
    """
    root = Path(checkout).expanduser().resolve()
    if not root.is_dir():
        raise ConfigError(f"--trtmc {root}: no such folder; pass a TensorRT-Model-Connect checkout")
    resolved = ""
    if revision:
        parsed = _git(root, "rev-parse", "--verify", f"{revision}^{{commit}}")
        if parsed.returncode != 0:
            raise ConfigError(f"--rev {revision}: not a commit of {root} ({parsed.stderr.strip()[:200]}); "
                              f"pass a branch, tag or commit it has")
        resolved = parsed.stdout.strip()
    else:
        head = _git(root, "rev-parse", "HEAD")
        resolved = f"{head.stdout.strip()}+worktree" if head.returncode == 0 else "unversioned"
    tasks_text = _text(root, TASKS_FILE, resolved if revision else "")
    if tasks_text is None:
        raise ConfigError(f"{root / TASKS_FILE}: not found{f' at {revision}' if revision else ''}; "
                          f"is {root} a TensorRT-Model-Connect checkout with apps/aiperf_qual?")
    profile_rel = f"{MODELS_DIR}/{profile}.yaml" if profile else ""
    profile_text = _text(root, profile_rel, resolved if revision else "") if profile_rel else None
    return OwnerFiles(tasks=_parse(tasks_text, str(root / TASKS_FILE)), tasks_file=TASKS_FILE,
                      profile=None if profile_text is None else _parse(profile_text, str(root / profile_rel)),
                      profile_file=profile_rel if profile_text is not None else "", revision=resolved)
