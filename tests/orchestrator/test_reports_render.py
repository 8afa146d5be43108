"""report.html renders in headless Chromium with its pictures drawn (skipped where Chromium is absent, as in CI)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from test_reports import qualify_journal

from orchestrator.reports import write_reports

_CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


@pytest.mark.skipif(_CHROMIUM is None, reason="headless Chromium is not installed (apt-get install -y chromium)")
def test_html_renders_with_pictures_in_headless_chromium(tmp_path: Path) -> None:
    """A screenshot of report.html shows the series and verdict colours, so the inline SVG really drew."""
    image = pytest.importorskip("PIL.Image")
    journal = qualify_journal().write(tmp_path / "run" / "events.jsonl")
    html = write_reports(journal, tmp_path / "run").html
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [str(_CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,7000", f"--screenshot={shot}",
         html.resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    with image.open(shot) as im:
        assert im.size == (1200, 7000)
        colours = {c for _n, c in im.convert("RGB").getcolors(maxcolors=1 << 20)}
    # client latency dots, verdict-grid green (correct), red (wrong) and amber (unparsed).
    for rgb in ((0x1F, 0x77, 0xB4), (0x2C, 0xA0, 0x2C), (0xD6, 0x27, 0x28), (0xFF, 0xBF, 0x00)):
        assert rgb in colours, rgb
