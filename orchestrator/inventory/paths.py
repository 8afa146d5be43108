"""What each path of a TRTMC checkout is to the audit: a manifest in one of the two layouts, a family's
own file (support, build, runtime, README, qualification), or a checkout-wide file. Pure: names only.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal

__all__ = [
    "MANIFEST_GLOBS",
    "SUPPORT_MATRIX",
    "SERVER_SCHEMA",
    "OWNER_TASKS",
    "OWNER_MODELS_DIR",
    "QUALIFICATION_README",
    "PRECISION_DEFAULT_FILES",
    "FamilyFileKind",
    "CheckoutFileKind",
    "manifest_path",
    "family_file",
    "checkout_file",
]

# Layouts (both may exist in one checkout):
# - older: `tests/e2e/models/<family>/manifests/<profile>.json`, builds in
#   `python/<package>/families/<family>/plugin.py`, runtimes in `src/runtime/models/<family>/`;
# - current: everything of a family under `families/<family>/`: `support.py` (Tasks, default precision),
#   `tests/manifests/*.json`, builds in `model.py` / `*_builder.py` (and `edge_llm/*.py`), `runtime/`, READMEs, and
#   the family's own qualification files (`tests/benchmark/*.yaml`, `tests/qualification/*.yaml`).
MANIFEST_GLOBS: dict[str, str] = {
    "tests/e2e/models": "tests/e2e/models/*/manifests/*.json",
    "families": "families/*/tests/manifests/*.json",
}
# The owners' published status table (website source data).
SUPPORT_MATRIX = "website/data/model-support-matrix.md"
# trtmc-server's request shapes: which chat content parts a served route accepts.
SERVER_SCHEMA = "apps/server/python/trtmc_server/schemas.py"
# The owners' AIPerf qualification: gates per Task, exceptions per profile.
OWNER_TASKS = "apps/aiperf_qual/config/tasks.yaml"
OWNER_MODELS_DIR = "apps/aiperf_qual/config/models"
# The scheme under which a family qualifies itself (its files live in the family folder).
QUALIFICATION_README = "apps/benchmark/qualification/README.md"
# Where an omitted manifest `precision` gets its value in the older layout: the e2e harness.
PRECISION_DEFAULT_FILES = ("tests/e2e_harness/orchestrator.py",)

FamilyFileKind = Literal["support", "build", "runtime", "readme", "qualification"]
CheckoutFileKind = Literal["precision", "matrix", "family-code", "server-schema", "owner-tasks", "owner-model",
                           "qualification-scheme", "task-sdk"]

_RUNTIME_SUFFIXES = (".cpp", ".cc", ".h", ".hpp")
_OLD_RUNTIME_NAMES = ("plugin.cpp", "pipeline.h")


def manifest_path(path: str) -> tuple[str, str] | None:
    """(layout, family folder) when `path` is a manifest in one of the layouts, else None."""
    parts = PurePosixPath(path).parts
    if not path.endswith(".json"):
        return None
    if len(parts) == 6 and parts[:3] == ("tests", "e2e", "models") and parts[4] == "manifests":
        return "tests/e2e/models", parts[3]
    if len(parts) == 5 and parts[0] == "families" and parts[2:4] == ("tests", "manifests"):
        return "families", parts[1]
    return None


def _is_build(parts: tuple[str, ...]) -> bool:
    name = parts[-1]
    if not name.endswith(".py"):
        return False
    if len(parts) == 3:
        return name in ("model.py", "plugin.py", "builder.py") or name.endswith("_builder.py")
    # A family's Edge-LLM route builds in its own folder (edge_llm/builder.py, standalone.py, ...).
    return len(parts) == 4 and parts[2] == "edge_llm" and name != "__init__.py"


def family_file(path: str) -> tuple[FamilyFileKind, str] | None:
    """(kind, family folder) when `path` is a family's own file the audit reads, else None."""
    parts = PurePosixPath(path).parts
    if len(parts) < 3 or parts[0] != "families":
        return None
    family, name = parts[1], parts[-1]
    if "tests" in parts[2:]:
        # Only the family's own qualification files; tests, fixtures and manifests are read elsewhere or not at all.
        if len(parts) == 5 and parts[2] == "tests" and parts[3] in ("benchmark", "qualification") \
                and name.endswith((".yaml", ".yml")):
            return "qualification", family
        return None
    if len(parts) == 3 and name == "support.py":
        return "support", family
    if name.endswith(".md"):
        return "readme", family
    if parts[2] == "runtime" and name.endswith(_RUNTIME_SUFFIXES):
        return "runtime", family
    if _is_build(parts):
        return "build", family
    return None


def checkout_file(path: str) -> tuple[CheckoutFileKind, str] | None:
    """(kind, family folder or "") for a checkout-wide file the audit reads, else None."""
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    if path == SUPPORT_MATRIX:
        return "matrix", ""
    if path == SERVER_SCHEMA:
        return "server-schema", ""
    if path == OWNER_TASKS:
        return "owner-tasks", ""
    if path == QUALIFICATION_README:
        return "qualification-scheme", ""
    if len(parts) == 5 and "/".join(parts[:4]) == OWNER_MODELS_DIR and name.endswith((".yaml", ".yml")):
        return "owner-model", ""
    if path in PRECISION_DEFAULT_FILES or (len(parts) == 3 and parts[0] == "python" and name == "build_cli.py"):
        return "precision", ""
    # The older layout's build plugin: python/<package>/families/<fam>/plugin.py.
    if name == "plugin.py" and len(parts) == 5 and parts[0] == "python" and parts[2] == "families":
        return "family-code", parts[3]
    # Its C++ runtime: src/runtime/models/<fam>/{plugin.cpp, pipeline.h, *_plan.h}.
    if len(parts) == 5 and parts[:3] == ("src", "runtime", "models") and (
            name in _OLD_RUNTIME_NAMES or name.endswith("_plan.h")):
        return "family-code", parts[3]
    # The Task SDK's public headers (`kTask = "..."`): every Task name the checkout defines.
    if parts and parts[0] == "include" and name.endswith((".h", ".hpp")):
        return "task-sdk", ""
    return None
