"""Parse TRTMC's qualification files (apps/aiperf_qual/config): tasks.yaml and config/models/<profile>.yaml,
with PyYAML's safe loader, into the OwnerFiles port. Pure: the bytes are read by the inventory's checkout
reader (a folder, a revision, a bare repository); nothing here decides a gate (orchestrator/judge/owners.py does).
"""

from __future__ import annotations

from typing import Any

import yaml

from orchestrator.base.errors import ConfigError
from orchestrator.spine.ports import OwnerFiles

__all__ = ["TASKS_FILE", "MODELS_DIR", "parse_owner_files"]

TASKS_FILE = "apps/aiperf_qual/config/tasks.yaml"
MODELS_DIR = "apps/aiperf_qual/config/models"


def _parse(text: str, where: str) -> dict[str, Any]:  # the owners' YAML, open: read by judge/owners.py
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected a mapping at the top, got {type(doc).__name__}")
    return doc


def parse_owner_files(tasks: bytes | None, profile_doc: bytes | None, *, profile: str, revision: str,
                      where: str) -> OwnerFiles:
    """tasks.yaml and the profile's exceptions file (None = the profile has none) as read from a checkout
    at `revision` (`where` names the checkout and revision in messages). Raises ConfigError when tasks.yaml
    is absent, saying so with the revision, or when a file is not a YAML mapping."""
    if tasks is None:
        raise ConfigError(f"{where}: has no {TASKS_FILE}, so the owners' gates cannot be read (revisions before the "
                          "owners' AIPerf qualification have no apps/aiperf_qual); pass --rev with a later revision, "
                          "or drop --trtmc")
    profile_rel = f"{MODELS_DIR}/{profile}.yaml" if profile else ""
    return OwnerFiles(tasks=_parse(tasks.decode("utf-8", "replace"), f"{where}: {TASKS_FILE}"), tasks_file=TASKS_FILE,
                      profile=None if profile_doc is None else _parse(profile_doc.decode("utf-8", "replace"),
                                                                      f"{where}: {profile_rel}"),
                      profile_file=profile_rel if profile_doc is not None else "", revision=revision)
