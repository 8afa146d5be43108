"""Which final rows of an earlier campaign still count on `--resume`: those made under the run key each
model has now (orchestrator/runkey/digests.py). Reads the models' journals; writes nothing."""

from __future__ import annotations

from pathlib import Path

from orchestrator.campaign.events import ModelFinished
from orchestrator.events import ModelResult, RunKey
from orchestrator.runkey.digests import key_changes, rekeyed
from orchestrator.spine.journal import iter_journal

__all__ = ["row_key", "still_current"]


def row_key(campaign_dir: Path, finished: ModelFinished) -> RunKey | None:
    """The run key of the model's last result row in its journal (None without a journal, row or key)."""
    if not finished.journal or not (campaign_dir / finished.journal).is_file():
        return None
    key = None
    for ev in iter_journal(campaign_dir / finished.journal):
        if isinstance(ev, ModelResult) and ev.model == finished.model:
            key = ev.row.keyed_by
    return key


def still_current(campaign_dir: Path, done: dict[str, ModelFinished],
                  now: dict[str, RunKey]) -> tuple[dict[str, ModelFinished], dict[str, str]]:
    """(the final rows whose key is the model's key now, model -> what changed for the others). A bundle the
    driver cannot read (it lives on the nodes) is taken as the row's: its bytes are checked where it runs."""
    kept: dict[str, ModelFinished] = {}
    stale: dict[str, str] = {}
    for model, finished in done.items():
        old, current = row_key(campaign_dir, finished), now.get(model)
        if current is None:
            kept[model] = finished
            continue
        if old is not None and not current.bundle_sha256:
            current = rekeyed(current, bundle_sha256=old.bundle_sha256)
        changes = key_changes(old, current)
        if changes:
            stale[model] = "; ".join(changes)
        else:
            kept[model] = finished
    return kept, stale


