"""Disk taken by the runs of an output folder and its clip cache, and whether each run's reports rebuild from
its folder alone (the cache moved aside meanwhile), byte for byte.

    .venv/bin/python bench/run_disk.py runs/      # after a few `aqbench qualify` runs, none still going

Prints each run folder's size (blocks on disk, as `du` counts them), the cache's, the total, and per run
whether `aqbench report` rebuilt report.json, report.md and report.html identical to what the run wrote.
Exit 1 when a rebuild differs or fails.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.config import RunConfig  # noqa: E402
from orchestrator.dataset.clip_cache import clip_cache_dir  # noqa: E402
from orchestrator.run.catalog import list_runs  # noqa: E402

REPORTS = ("report.json", "report.md", "report.html")


def du_bytes(folder: Path) -> int:
    """What `du -s` counts: the blocks of every file under `folder`."""
    return sum(os.lstat(os.path.join(r, f)).st_blocks * 512 for r, _, files in os.walk(folder) for f in files)


def rebuilt_identical(run_dir: Path) -> bool:
    with tempfile.TemporaryDirectory(prefix="aqbench-rebuild-") as out:
        done = subprocess.run([sys.executable, "-m", "orchestrator", "report", str(run_dir), "--out", out],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            return False
        return all(filecmp.cmp(run_dir / name, Path(out) / name, shallow=False) for name in REPORTS)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output_dir", type=Path, help="the folder holding the run folders ([run] output_dir)")
    args = ap.parse_args()
    cache = clip_cache_dir(RunConfig(output_dir=str(args.output_dir)))
    runs = list_runs(args.output_dir)
    aside = cache.with_name(cache.name + ".aside")
    ok = True
    cache.rename(aside)  # the reports must not need it
    try:
        for e in runs:
            same = rebuilt_identical(Path(e.path))
            ok &= same
            print(f"{e.run_id:<34} {e.kind:<8} {e.status:<6} {du_bytes(Path(e.path)) / 1e6:6.1f} MB  "
                  f"reports rebuilt {'identical' if same else 'DIFFERENT'}")
    finally:
        aside.rename(cache)
    total_runs = sum(du_bytes(Path(e.path)) for e in runs)
    print(f"{len(runs)} runs: {total_runs / 1e6:.1f} MB; clip cache {cache}: {du_bytes(cache) / 1e6:.1f} MB; "
          f"together {(total_runs + du_bytes(cache)) / 1e6:.1f} MB")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
