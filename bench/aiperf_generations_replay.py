"""Replay a soak journal's AIPerf memory samples through the per-generation aiperf_rss rule
(orchestrator/judge/generations.py): each pid one generation, from its first sample (the soak samples the
sending process, the successor from its `go`), as 10 s block medians. Prints each process and the verdict.
`PYTHONPATH=$PWD python bench/aiperf_generations_replay.py RUN_DIR/events.jsonl`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.judge.generations import Generation, GenerationRule, judge_generations
from orchestrator.soak.samples import SampleSeries


def main() -> None:
    by_pid: dict[int, SampleSeries] = {}
    with open(sys.argv[1]) as f:
        for line in f:
            if '"process_sampled"' not in line:
                continue
            e = json.loads(line)
            if e.get("kind") == "process_sampled" and e.get("role") == "aiperf":
                by_pid.setdefault(e["pid"], SampleSeries()).add(e["ts_ns"], e["rss_bytes"] / 2**20)
    gens = []
    for pid, series in by_pid.items():
        times, values, _n = series.between(0, 2**63 - 1)
        gens.append(Generation(pid=pid, times_s=times, values=values))
    v = judge_generations(gens, GenerationRule())
    t0 = gens[0].times_s[0] if gens else 0.0
    for g in v.generations:
        level = "not settled" if g.level is None else f"level {g.level:.1f} MiB, peak growth within {g.peak_growth:+.1f}"
        print(f"pid {g.pid}: start {(g.start_s - t0) / 60:.1f} min, {level}, {g.outcome}, {g.points} points")
    print(f"{v.outcome}: {v.reason}")


if __name__ == "__main__":
    main()
