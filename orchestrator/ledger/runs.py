"""A run folder as evidence: its result rows folded from `events.jsonl` (reports.build_report) plus the
identity facts of its RunStarted (command, server kind, TRTMC revision). Never reads report files or
in-memory state.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import msgspec

from orchestrator.base.errors import JournalError, UsageError
from orchestrator.config import Config
from orchestrator.events import RunStarted
from orchestrator.reports import RunReport, build_report
from orchestrator.spine.journal import iter_journal, journal_path

__all__ = ["RunEvidence", "journal_of", "read_run", "run_folders"]

# Where a trtmc-server run may record the TRTMC revision it was built from (tool_versions keys).
_TRTMC_KEYS = ("trtmc_commit", "trtmc_revision", "trtmc", "trtmc-server", "tensorrt-model-connect")


class RunEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """One run: where it is, what ran, with which TRTMC revision and dataset, and its folded report."""

    run_id: str
    run_dir: str
    journal: str
    command: str = ""
    server_kind: str = ""
    trtmc_revision: str = ""
    started_unix_ns: int = 0
    started_at: str = ""
    config: Config | None = None
    report: RunReport = RunReport()

    @property
    def dataset_identity(self) -> str:
        ds = self.report.provenance.dataset
        return ds.identity if ds else ""


def journal_of(run: str | Path) -> Path:
    """RUN_DIR/events.jsonl (or the journal itself). Raises UsageError when there is none."""
    p = Path(run)
    journal = journal_path(p) if p.is_dir() else p
    if not journal.is_file():
        raise UsageError(f"{journal}: no run journal here; pass a run folder (runs/<id>/) that holds events.jsonl")
    return journal


def run_folders(paths: Iterable[str | Path]) -> list[Path]:
    """Each path as a run folder, where a campaign folder (`campaign.jsonl`, no `events.jsonl`) stands for the
    run of each of its models (`models/<name>/`: the final attempt's journal as streamed to the driver).
    Raises UsageError for a campaign folder that holds no model journal yet."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir() and not journal_path(p).exists() and (p / "campaign.jsonl").is_file():
            models = sorted(j.parent for j in p.glob("models/*/events.jsonl"))
            if not models:
                raise UsageError(f"{p}: a campaign folder with no model journal (models/<name>/events.jsonl); "
                                 "no model of it has started yet")
            out += models
        else:
            out.append(p)
    return out


def _started(journal: Path) -> RunStarted | None:
    for event in iter_journal(journal):
        return event if isinstance(event, RunStarted) else None
    return None


def read_run(run: str | Path) -> RunEvidence:
    """Fold one run's journal. Blocks (file reads). Raises UsageError when there is no journal, it does not open
    with RunStarted, or a line before the last is corrupt."""
    journal = journal_of(run)
    started = _started(journal)
    if started is None:
        raise UsageError(f"{journal}: the journal does not open with run_started; not an aqbench run journal")
    try:
        report = build_report(journal)
    except JournalError as exc:
        raise UsageError(str(exc)) from None

    versions = started.tool_versions
    trtmc = next((str(versions[k]) for k in _TRTMC_KEYS if versions.get(k)), "")
    prov = report.provenance
    return RunEvidence(
        run_id=prov.run_id or started.run_id or journal.parent.name, run_dir=str(journal.parent), journal=str(journal),
        command=started.command, server_kind=started.config.server.kind if started.config is not None else "", trtmc_revision=trtmc,
        started_unix_ns=prov.started_unix_ns or started.ts_ns, started_at=prov.started_at, config=started.config,
        report=report,
    )
