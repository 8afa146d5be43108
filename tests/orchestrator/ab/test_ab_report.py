"""`aqbench report` on an `ab` session's journal rebuilds what `aqbench ab` wrote (ab.json, ab.md, ab.html) from
the journal alone, with the journaled [compare] tolerances, and no qualification report.* (an A/B session has
no per-model qualification, so one would list its model as a failure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ab_support import AbSpec, write_session

from orchestrator.ab import decide
from orchestrator.ab.render import render_html
from orchestrator.cli import main
from orchestrator.config import CompareConfig


def test_report_rebuilds_the_ab_files_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = write_session(tmp_path, AbSpec(scale=1.3))
    assert main(["--log-level", "error", "report", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ab.html", "ab.json", "ab.md", "events.jsonl"]
    assert "ab.html" in capsys.readouterr().out
    data = json.loads((tmp_path / "ab.json").read_text())
    assert data["outcome"] == "regressed" and data["exit_code"] == 1
    # The same verdict the command decided with the run's own tolerances.
    assert data["reason"] == decide(journal, CompareConfig()).reason
    assert (tmp_path / "ab.md").read_text().startswith("# aqbench ab: regressed")


def test_ab_html_shows_the_verdict_figures_and_pairs(tmp_path: Path) -> None:
    page = render_html(decide(write_session(tmp_path, AbSpec()), CompareConfig()))
    assert 'data-chart="ab-pairs"' in page and page.count("<polyline") == 2
    assert "<th>figure</th>" in page and "<th>A p90</th>" in page
    assert "`" not in page and "<script" not in page
