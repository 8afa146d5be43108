"""The audio-QA inventory of a TRTMC checkout (`aqbench inventory`): one module per step, `audit` ties them together."""

from orchestrator.inventory.audit import audit
from orchestrator.inventory.html import to_html
from orchestrator.inventory.probes import read_probes
from orchestrator.inventory.reconcile import (
    RevisionDiff,
    RowChange,
    TaskRename,
    diff_inventories,
    diff_markdown,
    load_inventory,
)
from orchestrator.inventory.records import (
    BLOCKER_GAP_KINDS,
    CAPABILITY_CLASSES,
    INVENTORY_SCHEMA_VERSION,
    LAYOUTS,
    STATUSES,
    Blocker,
    CheckpointRow,
    CodeSources,
    ConfiguredModel,
    Considered,
    Control,
    DeclaredTask,
    ErrorRow,
    Evidence,
    FamilyNote,
    Gap,
    Inventory,
    ManifestDocument,
    OwnerGate,
    OwnerStatus,
    ProbeOutcome,
    QualityRecord,
    Reconciliation,
    RouteLimits,
    ServedRoute,
    SourceDocument,
    TaskSeen,
    TreeSource,
    VariantRow,
)
from orchestrator.inventory.render import to_json, to_markdown
from orchestrator.inventory.tree import MANIFEST_GLOBS, read_code_sources, read_task_sources, read_tree

# Modules, one job each: `paths` says what each checkout path is (both layouts); `tree` reads those files from a
# folder, a bare repository or a git revision; `manifests` parses one manifest into a `profile.Profile`; `task_names`
# is the list of audio Task names and their classes; `classify` decides group membership and class; `precision` finds
# TRTMC's harness default precision; `support_file` reads a family's support.py, `code_facts` its build and runtime
# code, `readme` its READMEs, `families` gathers them per family; `findings` derives cited gaps from them; `route`
# reads the served chat schema; `owners` the owners' gates; `candidate` gives an audio-QA checkpoint its route limits,
# recorded quality, gate and blockers; `tasks` finds declared-only audio-QA checkpoints and the Task names in use;
# `matrix` reads the owners' support matrix; `rows` and `named_rows` build the rows; `considered` lists what was left
# out; `audit` ties them into an `Inventory`; `probes` reads `qualify` journals; `render` writes Markdown and JSON
# (the JSON shape: docs/inventory.md), `html` the HTML page; `reconcile` diffs two inventories.
__all__ = [
    "INVENTORY_SCHEMA_VERSION",
    "CAPABILITY_CLASSES",
    "BLOCKER_GAP_KINDS",
    "STATUSES",
    "LAYOUTS",
    "MANIFEST_GLOBS",
    "ManifestDocument",
    "SourceDocument",
    "TreeSource",
    "Evidence",
    "Control",
    "ConfiguredModel",
    "ProbeOutcome",
    "CheckpointRow",
    "VariantRow",
    "ErrorRow",
    "Reconciliation",
    "Inventory",
    "Gap",
    "OwnerStatus",
    "Considered",
    "CodeSources",
    "DeclaredTask",
    "RouteLimits",
    "QualityRecord",
    "OwnerGate",
    "Blocker",
    "ServedRoute",
    "TaskSeen",
    "FamilyNote",
    "RevisionDiff",
    "RowChange",
    "TaskRename",
    "audit",
    "read_probes",
    "read_task_sources",
    "read_code_sources",
    "read_tree",
    "load_inventory",
    "diff_inventories",
    "diff_markdown",
    "to_json",
    "to_markdown",
    "to_html",
]
