"""Time the README's main command: `aqbench qualify` on the shipped bench.toml (audioqa-v2, with its float32
reference side), install excluded, against a target of 6 minutes on 2 idle cores.

Usage: flock /tmp/aqbench-heavy.lock .venv/bin/python bench/qualify_time.py [--runs N]

Runs the command as a user would (`aqbench qualify` in a temporary copy of bench.toml whose runs go to a
temporary folder), then prints the wall time, its ratio to the target, the machine's load around it, and each
stage's share from the run's own journal (where the time goes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 360.0
AQBENCH = Path(sys.executable).with_name("aqbench")


class _Decision(msgspec.Struct):
    outcome: str = ""
    n: int = 0
    b: int | None = None
    c: int | None = None
    upper: float | None = None
    margin: float | None = None
    reference_score: float | None = None
    candidate_score: float | None = None


class _Line(msgspec.Struct):
    kind: str
    ts_ns: int = 0
    phase: str = ""
    outcome: str = ""
    model: str = ""
    result: _Decision | None = None


def _stages(journal: Path) -> tuple[list[tuple[str, str, float]], list[str]]:
    """(model, phase, seconds) for every phase that started and finished, in journal order, and each
    non-inferiority decision in a line."""
    decoder = msgspec.json.Decoder(_Line)
    started: dict[tuple[str, str], int] = {}
    out: list[tuple[str, str, float]] = []
    decisions: list[str] = []
    for raw in journal.read_bytes().splitlines():
        line = decoder.decode(raw)
        key = (line.model, line.phase)
        if line.kind == "noninferiority_judged" and line.result is not None:
            r = line.result
            decisions.append(f"{line.model}: non-inferiority {r.outcome}, n = {r.n}, b = {r.b}, c = {r.c}, upper "
                             f"{r.upper:.2f} < margin {r.margin}; reference {r.reference_score:.2f}, model "
                             f"{r.candidate_score:.2f} points")
        if line.kind == "phase_started":
            started[key] = line.ts_ns
        elif line.kind == "phase_finished" and key in started and line.phase != "model":
            out.append((line.model, line.phase, (line.ts_ns - started.pop(key)) / 1e9))
    return out, decisions


def quoted_minutes(wall_s: float) -> str:
    """How the README and docs/qualify.md quote a recorded wall time: 'about N minutes', to the half minute
    (tests/docs/test_quoted_figures.py holds them to the last run recorded in bench/RESULTS.md)."""
    minutes = max(1, round(wall_s / 30)) / 2
    return f"about {minutes:g} minute{'' if minutes == 1 else 's'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="how many times to run it (default 1)")
    args = parser.parse_args()
    for i in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "bench.toml"
            text = (ROOT / "bench.toml").read_text().replace('output_dir = "runs"', f'output_dir = "{tmp}/runs"')
            config.write_text(text)
            load_before = os.getloadavg()
            t0 = time.perf_counter()
            done = subprocess.run([str(AQBENCH), "qualify", "--config", str(config)], cwd=ROOT,
                                  capture_output=True, text=True)
            wall = time.perf_counter() - t0
            load_after = os.getloadavg()
            [run_dir] = list((Path(tmp) / "runs").iterdir())
            stages, decisions = _stages(run_dir / "events.jsonl")
            status = done.stderr.strip().splitlines()[-3:]
            print(f"run {i + 1}: exit {done.returncode}, wall {wall:.1f} s = {wall / TARGET_S:.2f} of the "
                  f"{TARGET_S:.0f} s target; load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
                  f"(1 min), {os.cpu_count()} CPUs")
            print(f"  the README quotes: {quoted_minutes(wall)}")
            for line in [*status[:2], *decisions]:
                print(f"  {line.strip()}")
            for model, phase, seconds in stages:
                print(f"  {model:20} {phase:15} {seconds:7.1f} s  {seconds / wall:5.1%}")
            shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
