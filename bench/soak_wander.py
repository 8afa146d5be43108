"""How much a clean soak's memory level wanders, from its journal: the figure `[soak] rss_wander_mib` states.

Reads a soak's events.jsonl (the server's ResourceSampled and the observer's ProcessSampled, 1 Hz) and,
per series, after `--skip` minutes from its first sample: the least-squares slope (MiB/h) and, around it,
the scatter of `--level` minute medians as the stated wander is defined (the sd of successive differences
over sqrt 2, per 5 minutes by default), and the scatter of 1-minute medians for comparison. Reads files
only; no lock needed.

    .venv/bin/python bench/soak_wander.py RUN_DIR [--skip 10] [--level 5]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

_MIB = 2.0**20


def _series(events: Path) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = {}
    with events.open() as fh:
        for line in fh:
            if '"resource_sampled"' in line:
                ev = json.loads(line)
                if not ev.get("pre_ready"):
                    out.setdefault("server_rss", []).append((ev["ts_ns"] / 1e9, ev["rss_bytes"] / _MIB))
            elif '"process_sampled"' in line:
                ev = json.loads(line)
                if ev["rss_bytes"]:
                    name = "orchestrator_rss" if ev["role"] == "orchestrator" else "aiperf_rss"
                    out.setdefault(name, []).append((ev["ts_ns"] / 1e9, ev["rss_bytes"] / _MIB))
    return out


def _level_scatter(t: np.ndarray, resid: np.ndarray, level_s: float) -> tuple[float, int]:
    """The sd of successive differences of `level_s` medians over sqrt 2, and how many levels."""
    index = ((t - t[0]) // level_s).astype(int)
    medians = np.array([np.median(resid[index == k]) for k in np.unique(index)
                        if np.count_nonzero(index == k) >= level_s / 2])
    if medians.size < 3:
        return float("nan"), int(medians.size)
    return float(np.std(np.diff(medians), ddof=1) / np.sqrt(2)), int(medians.size)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--skip", type=float, default=10.0, help="minutes left out from the first sample")
    ap.add_argument("--level", type=float, default=5.0, help="minutes per level (the stated wander's)")
    args = ap.parse_args()
    for name, points in sorted(_series(args.run_dir / "events.jsonl").items()):
        arr = np.array(points)
        t, y = arr[:, 0], arr[:, 1]
        keep = t >= t[0] + args.skip * 60
        t, y = t[keep], y[keep]
        if t.size < 120:
            print(f"{name}: {t.size} samples after {args.skip:g} min: too few")
            continue
        hours = (t - t[0]) / 3600
        slope, intercept = np.polyfit(hours, y, 1)
        resid = y - (slope * hours + intercept)
        level, n_level = _level_scatter(t, resid, args.level * 60)
        minute, n_minute = _level_scatter(t, resid, 60)
        print(f"{name}: {t.size} samples over {(t[-1] - t[0]) / 60:.1f} min after {args.skip:g} min; median "
              f"{np.median(y):.1f} MiB; slope {slope:+.2f} MiB/h; wander (successive-difference sd / sqrt 2, "
              f"around the slope): {level:.2f} MiB per {args.level:g} min ({n_level} levels), {minute:.2f} MiB per "
              f"minute ({n_minute} levels); 1 Hz sample sd {np.std(resid):.2f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
