"""Every report kind, Markdown and HTML, writes its figures formatted: no raw float (a number with four or more
decimals, as `0.9454545454545454` or `0.0000%` were) outside chart coordinates and style sheets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ab_support import AbSpec, write_session
from campaign_support import journal as campaign_journal
from compare_support import RunSpec, write_run
from test_reports_render import _fixture_run, _sweep_journal, _with_crashy_server_story

from orchestrator.campaign import write_campaign_reports
from orchestrator.cli import main
from orchestrator.events import RunFinished
from orchestrator.reports import write_reports
from orchestrator.reports.sweep import write_sweep_report

_RAW = re.compile(r"(?<![\w.])\d+\.\d{4,}(?![\w.])")
_NOT_TEXT = re.compile(r"<svg.*?</svg>|<style>.*?</style>", re.S)


def _raw_floats(paths: list[Path]) -> dict[str, list[str]]:
    found = {}
    for p in paths:
        if hits := sorted(set(_RAW.findall(_NOT_TEXT.sub("", p.read_text(encoding="utf-8"))))):
            found[p.name] = hits[:5]
    return found


def _qualify(tmp: Path) -> list[Path]:
    j = _with_crashy_server_story()
    j.add(RunFinished(status="failed", exit_code=1))
    paths = write_reports(j.write(tmp / "events.jsonl"), tmp)
    return [paths.markdown, paths.html]


def _real_qualify(tmp: Path) -> list[Path]:
    run = _fixture_run(tmp, "qualify-v2")
    return [run / "report.md", run / "report.html"]


def _run_aiperf_and_compare(tmp: Path) -> list[Path]:
    base = write_run(tmp / "base", RunSpec(seed=1, requests=200, error_rate=0.05))
    cand = write_run(tmp / "cand", RunSpec(seed=2, requests=200, model_call_extra_ms=30.0))
    assert main(["--log-level", "error", "report", str(base)]) == 0
    main(["--log-level", "error", "compare", str(base), str(cand), "--out", str(tmp / "cmp")])
    return [base / "report.md", base / "report.html", tmp / "cmp" / "compare.md", tmp / "cmp" / "compare.html"]


def _ab(tmp: Path) -> list[Path]:
    write_session(tmp, AbSpec(scale=1.3))
    assert main(["--log-level", "error", "report", str(tmp)]) == 0
    return [tmp / "ab.md", tmp / "ab.html"]


def _sweep(tmp: Path) -> list[Path]:
    return [Path(p) for p in write_sweep_report(_sweep_journal(tmp / "events.jsonl"), tmp)[1:]]


def _campaign(tmp: Path) -> list[Path]:
    campaign_journal(tmp)
    write_campaign_reports(tmp)
    return [tmp / "report.md", tmp / "report.html"]


@pytest.mark.parametrize("build", [_qualify, _real_qualify, _run_aiperf_and_compare, _ab, _sweep, _campaign],
                         ids=lambda f: f.__name__.strip("_"))
def test_no_raw_float_in_any_report(build, tmp_path: Path) -> None:
    paths = build(tmp_path)
    assert paths and all(p.is_file() for p in paths)
    assert _raw_floats(paths) == {}


def test_the_scan_sees_a_raw_float(tmp_path: Path) -> None:
    """The check itself: the gate row issue 35 found, and a percentage written with four decimals."""
    page = tmp_path / "r.md"
    page.write_text("| gate | Observed 0.9454545454545454 |\n0/89 = 0.0000% <svg><text>12.34567</text></svg>")
    assert _raw_floats([page]) == {"r.md": ["0.0000", "0.9454545454545454"]}
