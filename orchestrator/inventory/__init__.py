"""The audio-QA inventory of a TRTMC checkout (`aqbench inventory`).

Modules, one job each: `tree` reads manifests and other checkout files from a folder, a bare repository
or a git revision; `manifests` parses one manifest into a `profile.Profile`; `classify` decides group
membership and class; `precision` finds TRTMC's default precision; `tasks` finds Task declarations and
`findings` code gaps in family sources; `matrix` reads the owners' support matrix; `rows` builds one row
per checkpoint; `considered` lists what was left out; `audit` ties them into an `Inventory`; `probes`
reads `qualify` journals; `render` writes Markdown and JSON (its docstring documents the JSON shape),
`html` the HTML page; `reconcile` diffs two inventories.
"""

from orchestrator.inventory.audit import audit
from orchestrator.inventory.html import to_html
from orchestrator.inventory.probes import read_probes
from orchestrator.inventory.reconcile import RevisionDiff, RowChange, diff_inventories, diff_markdown, load_inventory
from orchestrator.inventory.records import (
    CAPABILITY_CLASSES,
    INVENTORY_SCHEMA_VERSION,
    LAYOUTS,
    STATUSES,
    CheckpointRow,
    CodeSources,
    ConfiguredModel,
    Considered,
    Control,
    ErrorRow,
    Evidence,
    Gap,
    Inventory,
    ManifestDocument,
    OwnerStatus,
    ProbeOutcome,
    Reconciliation,
    SourceDocument,
    TreeSource,
    VariantRow,
)
from orchestrator.inventory.render import to_json, to_markdown
from orchestrator.inventory.tree import MANIFEST_GLOBS, read_code_sources, read_task_sources, read_tree

__all__ = [
    "INVENTORY_SCHEMA_VERSION",
    "CAPABILITY_CLASSES",
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
    "RevisionDiff",
    "RowChange",
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
