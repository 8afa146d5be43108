"""`aqbench report` of a soak: its run report and its soak report folded in one pass over the journal."""

from __future__ import annotations

import gzip
from pathlib import Path

from orchestrator.reports import build_report
from orchestrator.reports.soak import SoakFold, fold_soak
from orchestrator.spine.journal import read_journal

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "journals" / "soak-v2" / "events.jsonl.gz"


class TestOnePass:
    def test_soak_fold_beside_the_run_report_equals_its_own_and_names_a_torn_line(self, tmp_path: Path) -> None:
        """A SoakFold fed beside the run report's fold (one pass, as `aqbench report` folds a soak) gives the
        soak report of its own fold, and both name a torn last line."""
        journal = tmp_path / "events.jsonl"
        journal.write_bytes(gzip.decompress(FIXTURE.read_bytes())[:-300])
        beside = SoakFold()
        run = build_report(journal, also=(beside.add,))
        events, torn = read_journal(journal)
        assert torn is not None and run.provenance.torn_line is not None
        assert run.provenance.torn_line.line == torn.line
        alone = fold_soak(events, torn)
        assert beside.report(torn) == alone and alone.torn_line == torn.line
