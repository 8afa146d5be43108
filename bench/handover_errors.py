"""Where a soak's errors fall against its AIPerf handovers: the server's error rate in the minute after each
successor AIPerf process was launched, against the rest of the load (the first window, the warmup, left out).

Run: .venv/bin/python bench/handover_errors.py RUN_DIR [--after 60] [--skip 300]
Reads the run's journal (AiperfStarted events: each process's launch) and the server's records (status per request).
"""

from __future__ import annotations

import argparse
import glob
from pathlib import Path

import msgspec

from orchestrator.events import AiperfStarted
from orchestrator.spine.journal import iter_journal, journal_path


class _Record(msgspec.Struct):
    status: int
    start_unix_ns: int


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--after", type=float, default=60.0, help="seconds after a successor's launch counted as near it")
    ap.add_argument("--skip", type=float, default=300.0, help="seconds of the first window left out (the warmup)")
    args = ap.parse_args()
    launches = sorted({e.ts_ns / 1e9 for e in iter_journal(journal_path(args.run_dir)) if isinstance(e, AiperfStarted)})
    decoder = msgspec.json.Decoder(_Record)
    counts = {"near": [0, 0], "elsewhere": [0, 0]}  # [requests, non-2xx]
    t0: float | None = None
    for path in sorted(glob.glob(str(args.run_dir / "server" / "*" / "records-*.jsonl"))):
        with open(path, "rb") as fh:
            for line in fh:
                try:
                    r = decoder.decode(line)
                except msgspec.DecodeError:
                    continue  # a torn last line
                t = r.start_unix_ns / 1e9
                t0 = t if t0 is None else t0
                if t - t0 < args.skip:
                    continue
                where = "near" if any(0 <= t - s < args.after for s in launches[1:]) else "elsewhere"
                counts[where][0] += 1
                counts[where][1] += r.status >= 400
    print(f"AIPerf processes launched: {len(launches)} ({len(launches) - 1} successors)")
    for where, (n, bad) in counts.items():
        print(f"{where:>9}: {bad} errors of {n} requests = {bad / max(n, 1):.4%}")


if __name__ == "__main__":
    main()
