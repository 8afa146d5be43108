"""Run reports rebuilt from the journal alone: report.json (versioned RunReport), report.md, report.html.
`write_reports(journal, out_dir)` is the one entry point.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import msgspec

from orchestrator.events import AnyEvent
from orchestrator.reports.fold import ReportFold, build_report, fold
from orchestrator.reports.html import render_html
from orchestrator.reports.markdown import render_markdown
from orchestrator.reports.schema import REPORT_VERSION, RunReport

# Reports import only events, the journal reader and orchestrator.judge.stats, never live state.
__all__ = [
    "REPORT_VERSION",
    "RunReport",
    "ReportFold",
    "ReportPaths",
    "fold",
    "build_report",
    "encode_report",
    "load_report",
    "render_markdown",
    "render_html",
    "write_reports",
]


class ReportPaths(msgspec.Struct, frozen=True, kw_only=True):
    """Where write_reports put the three files, and the report they hold."""

    json: Path
    markdown: Path
    html: Path
    report: RunReport

    def __iter__(self) -> Iterator[Path]:
        """The three file paths (json, markdown, html), so callers can list what was written."""
        return iter((self.json, self.markdown, self.html))


def encode_report(report: RunReport) -> bytes:
    """report.json bytes: sorted keys, one-space indent, trailing newline; equal reports give equal bytes."""
    raw = msgspec.json.encode(report, order="sorted")
    return msgspec.json.format(raw, indent=1) + b"\n"


def load_report(path: str | Path) -> RunReport:
    """Read a report.json back (for soak comparisons and tests)."""
    return msgspec.json.decode(Path(path).read_bytes(), type=RunReport)


def _write_atomic(path: Path, data: bytes) -> None:
    # A reader (or a second `aqbench report`) never sees half a file.
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_reports(journal_path: str | Path, out_dir: str | Path, *,
                  also: Sequence[Callable[[AnyEvent], None]] = ()) -> ReportPaths:
    """Fold `journal_path` and write report.json, report.md and report.html into `out_dir`; `also`: other
    folds handed every event in the same pass (build_report).

    Blocks (file reads and writes); async callers use `anyio.to_thread.run_sync`. Raises JournalError
    when the journal cannot be opened or a line other than the last is corrupt.
    """
    report = build_report(journal_path, also=also)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(json=out / "report.json", markdown=out / "report.md", html=out / "report.html",
                        report=report)
    _write_atomic(paths.json, encode_report(report))
    _write_atomic(paths.markdown, render_markdown(report).encode())
    _write_atomic(paths.html, render_html(report).encode())
    return paths
