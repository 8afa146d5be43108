"""Causes on every surface: a real soak of the reference server with a 1 MiB request-body limit (413 `request body
exceeds ...`) and an 8 s audio limit (400 `audio_too_long`), cut to tests/data/soak_causes/: soak.md, soak.html,
the run-shaped report (run-aiperf's renderer) and the live page list the 413s apart from the 400s, each with its
body."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from orchestrator.live.state import PageFold
from orchestrator.reports import write_reports
from orchestrator.reports.soak import write_soak_report
from orchestrator.spine.journal import read_journal

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "soak_causes" / "events.jsonl.gz"


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("causes") / "events.jsonl"
    path.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    return path


def _kinds_in(text: str) -> tuple[bool, bool]:
    return ("request body of" in text and "exceeds --max-body-bytes 1048576" in text,
            "audio_too_long" in text and "audio is" in text)


class TestCausesOnEverySurface:
    def test_soak_md_and_html_list_413_apart_from_400_with_a_body_each(self, journal: Path) -> None:
        """soak.md's errors table has a 413 row and a 400 row (not one `http_4xx` count), each with an example
        body; soak.html shows the same table."""
        _, md, html = write_soak_report(journal, journal.parent)
        text = md.read_text()
        section = text[text.index("## Errors by HTTP status and body"):text.index("## Windows")]
        rows = [r for r in section.splitlines() if r.startswith("| 4")]
        assert [r.split(" | ")[0] for r in rows] == ["| 413", "| 400"] or \
            sorted(r.split(" | ")[0] for r in rows) == ["| 400", "| 413"], rows
        assert _kinds_in(section) == (True, True), section
        assert _kinds_in(html.read_text()) == (True, True)
        assert "Errors by HTTP status and body" in html.read_text()

    def test_the_run_report_lists_each_status_and_body(self, journal: Path) -> None:
        """report.md (the renderer run-aiperf's report uses) lists what the failed requests were answered, the 413s
        and the 400s on rows of their own."""
        paths = write_reports(journal, journal.parent)
        text = paths.markdown.read_text()
        answered = text[text.index("What the failed requests were answered, by window"):]
        assert "| 413 |" in answered and "| 400 |" in answered, answered[:2000]
        assert _kinds_in(answered) == (True, True)

    def test_the_live_page_shows_the_kinds(self, journal: Path) -> None:
        """The live page's fold gives the same kinds, 413 and 400 apart, each with its example body."""
        events, torn = read_journal(journal)
        assert torn is None
        fold = PageFold()
        fold.add_all(events)
        kinds = {k.http_status: k for k in fold.state().error_kinds}
        assert {413, 400} <= set(kinds)
        assert "exceeds --max-body-bytes 1048576" in kinds[413].example
        assert "audio_too_long" in kinds[400].example or "audio is" in kinds[400].example
