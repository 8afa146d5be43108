"""`aqbench report` of a soak: its run report and its soak report folded in one pass over the journal."""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

from orchestrator.commands.report import register
from orchestrator.journal import read_journal
from orchestrator.reports.soak import fold_soak, write_soak_report

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "journals" / "soak-v2" / "events.jsonl.gz"


def _report(run_dir: Path) -> int:
    parser = argparse.ArgumentParser(prog="aqbench")
    register(parser.add_subparsers())
    args = parser.parse_args(["report", str(run_dir)])
    return int(args.func(args) or 0)


class TestOnePass:
    def test_soak_report_equals_its_own_fold_and_names_a_torn_line(self, tmp_path: Path) -> None:
        """The soak report written beside the run report equals the soak fold of the journal alone, and a torn
        last line is named in both (the soak report folded on its own pass named none)."""
        run, alone = tmp_path / "run", tmp_path / "alone"
        run.mkdir()
        (run / "events.jsonl").write_bytes(gzip.decompress(FIXTURE.read_bytes())[:-300])
        assert _report(run) == 0
        events, torn = read_journal(run / "events.jsonl")
        assert torn is not None
        write_soak_report(run / "events.jsonl", alone, report=fold_soak(events, torn))
        for name in ("soak.json", "soak.md", "soak.html"):
            assert (run / name).read_bytes() == (alone / name).read_bytes(), name
        assert f"last line ({torn.line}) is torn" in (run / "soak.md").read_text()
        assert f"{torn.line}" in (run / "report.md").read_text()
