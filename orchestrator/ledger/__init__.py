"""The group ledger: inventory rows joined with run result rows, the closing rules, and its renderings."""

from orchestrator.ledger.inventory_view import InventoryView, load_inventory
from orchestrator.ledger.join import (
    FINAL_STATUSES,
    LOAD_ONLY_COMMANDS,
    Ledger,
    LedgerLine,
    LedgerRun,
    OpenItem,
    RunRowRef,
    VariantLine,
    build_ledger,
)
from orchestrator.ledger.render import ledger_json, ledger_markdown
from orchestrator.ledger.runs import RunEvidence, read_run, run_folders

__all__ = [
    "FINAL_STATUSES",
    "LOAD_ONLY_COMMANDS",
    "InventoryView",
    "Ledger",
    "LedgerLine",
    "LedgerRun",
    "OpenItem",
    "RunEvidence",
    "RunRowRef",
    "VariantLine",
    "build_ledger",
    "ledger_json",
    "ledger_markdown",
    "load_inventory",
    "read_run",
    "run_folders",
]
