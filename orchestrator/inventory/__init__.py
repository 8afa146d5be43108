"""The audio-QA inventory of a TRTMC checkout (`aqbench inventory`).

Modules, one job each: `tree` reads manifests and family sources from a folder or a git revision;
`manifests` parses one manifest into a `profile.Profile`; `classify` decides group membership and class;
`tasks` finds Task declarations in family sources; `rows` builds one row per checkpoint; `audit` ties
them into an `Inventory`; `probes` reads `qualify` journals; `render` writes Markdown and JSON.
"""

from orchestrator.inventory.audit import audit
from orchestrator.inventory.probes import read_probes
from orchestrator.inventory.records import (
    CAPABILITY_CLASSES,
    INVENTORY_SCHEMA_VERSION,
    LAYOUTS,
    STATUSES,
    CheckpointRow,
    ConfiguredModel,
    Control,
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
from orchestrator.inventory.render import to_json, to_markdown
from orchestrator.inventory.tree import MANIFEST_GLOBS, read_task_sources, read_tree

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
    "audit",
    "read_probes",
    "read_task_sources",
    "read_tree",
    "to_json",
    "to_markdown",
]
