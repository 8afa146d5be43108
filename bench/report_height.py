"""How tall each report page is at 1280 px wide, and where its first screen (1280x800) ends, in headless Chromium.

Rebuilds the reports of a run folder (`aqbench report`) or takes HTML files as they are, and prints one line per
page: its height in px and the first line of text below the first screen. Compare two trees by running it with
PYTHONPATH set to each.

Run: .venv/bin/python bench/report_height.py RUN_DIR_OR_HTML [...] [--rebuild]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

_BELOW = """() => {
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const r = document.createRange(); r.selectNodeContents(n);
    if (n.textContent.trim() && r.getBoundingClientRect().top > 800) return n.textContent.trim().slice(0, 60);
  }
  return "";
}"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--rebuild", action="store_true", help="run `aqbench report` on each run folder first")
    args = ap.parse_args()
    pages: list[Path] = []
    for path in args.paths:
        if path.is_dir():
            if args.rebuild:
                subprocess.run([sys.executable, "-m", "orchestrator", "--log-level", "error", "report", str(path)],
                               check=True, stdout=subprocess.DEVNULL)
            pages += sorted(path.glob("*.html"))
        else:
            pages.append(path)
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("chromium is not installed (apt-get install -y chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        for page_path in pages:
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            page = context.new_page()
            page.goto(page_path.resolve().as_uri(), wait_until="load")
            height = page.evaluate("document.documentElement.scrollHeight")
            print(f"{page_path}: {height} px tall; below the first screen from: {page.evaluate(_BELOW)!r}")
            context.close()
        browser.close()


if __name__ == "__main__":
    main()
