"""What the live page may show: the facts `aqbench publish` treats as private for this run (folders, host
and user names, environment values, credentials), applied by publish's own Scrubber. Reads no files.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

from orchestrator.config import Config
from orchestrator.ledger import RunEvidence
from orchestrator.publish.private import Scrubber
from orchestrator.publish.write import gather_facts
from orchestrator.reports import RunReport
from orchestrator.reports.schema import DatasetIdentity, Provenance

__all__ = ["page_scrubber"]


def page_scrubber(config: Config, run_id: str, run_dir: Path, argv: list[str]) -> Callable[[object], object]:
    """The function that makes JSON-like data fit to show: publish's scrub with this run's private facts
    (its folder, config folder, dataset, bundles, this host and user, `[publish]` roots and names)."""
    dataset = DatasetIdentity(path=config.dataset.path) if config.dataset.path else None
    prov = Provenance(run_id=run_id, argv=list(argv), config_path=config.source, hostname=socket.gethostname(),
                      dataset=dataset)
    run = RunEvidence(run_id=run_id, run_dir=str(run_dir), journal=str(run_dir / "events.jsonl"), config=config,
                      report=RunReport(provenance=prov))
    return Scrubber(gather_facts([run], config.publish)).data
