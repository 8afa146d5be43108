"""Which published result rows are under the current run key, so that a publication never presents a row
made under another configuration, dataset, bundle, server command or code as current. Pure.
"""

from __future__ import annotations

import msgspec

from orchestrator.events import RunKey
from orchestrator.ledger import LOAD_ONLY_COMMANDS, RunEvidence
from orchestrator.runkey.digests import key_changes

__all__ = ["KeyCheck", "StaleRow", "check_keys"]

# How the current key was chosen, as the publication says it.
FROM_CONFIG = "the run keys {config} gives now"
FROM_NEWEST = "the newest keyed row of each model among these runs (pass --config to check against a configuration)"


class StaleRow(msgspec.Struct, frozen=True, kw_only=True):
    """A result row made under another run key than the current one, with what changed."""

    run_id: str
    model: str
    note: str


class KeyCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The published rows that are not current (`stale`) and where the current keys came from."""

    source: str
    stale: list[StaleRow] = []

    def note(self, run_id: str, model: str) -> str:
        """Why this row is stale ("" when it is current, or when no key is known)."""
        return next((s.note for s in self.stale if s.run_id == run_id and s.model == model), "")


def check_keys(runs: list[RunEvidence], keys: dict[str, RunKey] | None = None, *, config: str = "") -> KeyCheck:
    """Check every judged row of `runs` against its model's current key: `keys` (model name -> key now, from
    `config`) where it names the model, else the newest keyed row of that model. A model with neither has no
    current key and its rows are not marked.

    The current key of a model is the one its configuration gives now (`aqbench publish --config`, computed as
    `aqbench ledger --config` does), else the newest keyed row of that model among the published runs (the ledger's
    rule without a configuration). Load-only runs (run-aiperf, soak, ingest) judge nothing and are not checked.
    """
    judged = [run for run in runs if run.command not in LOAD_ONLY_COMMANDS]
    current: dict[str, RunKey] = dict(keys or {})
    for run in sorted(judged, key=lambda r: -r.started_unix_ns):
        for row in run.report.rows:
            if row.keyed_by is not None:
                current.setdefault(row.model, row.keyed_by)
    stale: list[StaleRow] = []
    for run in judged:
        for row in run.report.rows:
            now = current.get(row.model)
            changes = key_changes(row.keyed_by, now) if now is not None else []
            if now is not None and changes:
                old = row.keyed_by.digest if row.keyed_by is not None else "none"
                stale.append(StaleRow(run_id=run.run_id, model=row.model,
                                      note=f"run key {old} is not the current {now.digest}: {'; '.join(changes)}"))
    source = FROM_CONFIG.format(config=config or "the configuration") if keys is not None else FROM_NEWEST
    return KeyCheck(source=source, stale=stale)
