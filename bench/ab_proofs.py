"""The real-run proofs of `aqbench ab` (issue 32) with the embedded reference server, and the wall time of a
decided ab beside the two separate runs (and the compare) that `aqbench compare` needs for the same question.

Run (under the heavy lock, it starts real servers and AIPerf):
    flock /tmp/aqbench-heavy.lock .venv/bin/python bench/ab_proofs.py [--pairs 6] [--block-requests 50]

Cases (the candidate's reference server gets the fault flags; the baseline none):
  aa-hog       A/A, a CPU hog (one busy process per core) started once half the blocks have run: expect exit 0
  aa           A/A without a hog (are two identically configured servers exchangeable?): expect exit 0
  latency-400  --fault-latency-ms 400: expect exit 1
  share-0.15   --fault-latency-ms 2000 --fault-latency-share 0.15: expect exit 1
  items-0.4    --fault-latency-ms 1000 --fault-latency-item-share 0.4: expect exit 1
Then `run-aiperf` of the baseline and of the latency-400 candidate with as many requests as one ab side
ran, and `compare` of the two, timed together. Prints one line per case and a markdown table for RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.events import RequestCorrelated, ServerRecord  # noqa: E402
from orchestrator.spine.journal import read_journal  # noqa: E402

AQBENCH = [sys.executable, "-m", "orchestrator", "--log-level", "warning"]
CONFIG = """
[run]
output_dir = "{out}"
name = "{name}"

[server]
kind = "reference"
replicas = 2
startup_timeout_s = 120.0
stop_grace_s = 10.0

[[models]]
name = "reference-audioqa"
family = "aqbench-reference"
checkpoint = "aqbench/reference-cascade"
server_args = {server_args}

[models.correctness]
min_pass_rate = 0.0
deterministic = true

[dataset]
path = "{dataset}"

[workload]
warmup_requests = 2
requests = {requests}
concurrency = 2
request_timeout_s = 60.0
arms = ["audio", "transcript"]
deadline_s = 600.0
"""
CASES = {"aa-hog": ([], 0), "aa": ([], 0), "latency-400": (["--fault-latency-ms", "400"], 1),
         "share-0.15": (["--fault-latency-ms", "2000", "--fault-latency-share", "0.15"], 1),
         "items-0.4": (["--fault-latency-ms", "1000", "--fault-latency-item-share", "0.4"], 1)}
_HOG = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"


def _config(folder: Path, name: str, args: list[str], requests: int) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(CONFIG.format(out=folder / "runs" / name, name=name, server_args=json.dumps(args),
                                  dataset=ROOT / "datasets" / "audioqa-v1", requests=requests))
    return path


def _ab(folder: Path, case: str, pairs: int, block_requests: int) -> dict[str, object]:
    args, expected = CASES[case]
    a = _config(folder, f"{case}-a", [], 40)
    b = _config(folder, f"{case}-b", args, 40)
    cmd = AQBENCH + ["ab", "--baseline", str(a), "--candidate", str(b), "--pairs", str(pairs), "--block-requests",
                     str(block_requests), "--block-warmup", "2", "--seed", "1"] + (
                         # the raw A/A: intervals without the instance allowance, to measure what it must cover
                         ["--instance-allowance", "0", "--instance-tail-allowance", "0"] if case == "aa" else [])
    hogs: list[subprocess.Popen[bytes]] = []
    started = time.monotonic()
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None and proc.stdout is not None
        err: list[str] = []
        for line in proc.stderr:
            err.append(line)
            m = re.match(r"\s+block (\d+) ", line)
            if case == "aa-hog" and m and int(m[1]) + 1 == pairs and not hogs:  # half the blocks done
                hogs = [subprocess.Popen([sys.executable, "-c", _HOG.format(s=900)]) for _ in range(os.cpu_count() or 2)]
        out = proc.stdout.read()
        code = proc.wait()
    wall = time.monotonic() - started
    for hog in hogs:
        hog.kill()
        hog.wait()
    runs = list((folder / "runs" / f"{case}-a").iterdir())
    result = json.loads((runs[0] / "ab.json").read_text()) if runs and (runs[0] / "ab.json").is_file() else {}
    regressed = [f["key"] for f in result.get("figures", []) if f["change"] == "regressed"]
    improved = [f["key"] for f in result.get("figures", []) if f["change"] == "improved"]
    p50s = {f["key"]: [round((f.get("lower") or 0) * 100, 1), round((f.get("upper") or 0) * 100, 1)]
            for f in result.get("figures", []) if f["key"].endswith((".p50", ".p90", ".tail_share"))}
    host = (result.get("host_baseline") or {}, result.get("host_candidate") or {})
    # What the candidate's server says it slowed, per B block (one server start each: fresh servers every pair).
    slowed = slowed_per_block(runs[0] / "events.jsonl") if runs else []
    return {"case": case, "exit": code, "expected": expected, "ok": code == expected, "wall_s": round(wall, 1),
            "pairs": len(result.get("pairs", [])), "outcome": result.get("outcome"), "stop": result.get("stop_reason"),
            "regressed": regressed, "n_regressed": len(regressed), "improved": improved, "p50_intervals_pct": p50s,
            "pair_p90_ms": [[x.get("baseline_p90_ms"), x.get("candidate_p90_ms")] for x in result.get("pairs", [])],
            "observed_noise": result.get("observed_noise"), "slowed_per_start": slowed, "outside_cpus": [h.get("outside_cpus") for h in host],
            "run": str(runs[0]) if runs else "", "tail": "" if code == expected else (out + "".join(err))[-3000:]}


def slowed_per_block(journal: Path) -> list[list[int]]:
    """[profiling requests the candidate's server slowed (its records' `fault_latency_ms`), profiling requests]
    per B block, in block order: the journal's RequestCorrelated (window) joined with ServerRecord (request id)."""
    events, _torn = read_journal(journal)
    slowed = {e.request_id for e in events if isinstance(e, ServerRecord) and e.fault_latency_ms}
    blocks: dict[int, list[int]] = {}
    for e in events:
        if isinstance(e, RequestCorrelated) and e.phase == "profiling" and (m := re.search(r"/ab-(\d+)-B$", e.window)):
            row = blocks.setdefault(int(m[1]), [0, 0])
            row[0] += e.request_id in slowed
            row[1] += 1
    return [blocks[k] for k in sorted(blocks)]


def _separate(folder: Path, requests: int) -> dict[str, object]:
    """run-aiperf of the baseline, then of the 400 ms candidate, then compare: the separate-runs way."""
    started = time.monotonic()
    walls, dirs = [], []
    for name, args in (("sep-a", []), ("sep-b", CASES["latency-400"][0])):
        t = time.monotonic()
        subprocess.run(AQBENCH + ["run-aiperf", "--config", str(_config(folder, name, args, requests))], cwd=ROOT,
                       capture_output=True, check=False)
        walls.append(round(time.monotonic() - t, 1))
        dirs.append(next((folder / "runs" / name).iterdir()))
    t = time.monotonic()
    cmp = subprocess.run(AQBENCH + ["compare", str(dirs[0]), str(dirs[1]), "--out", str(folder / "compare")],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    return {"case": "separate runs + compare", "exit": cmp.returncode, "run_walls_s": walls,
            "compare_s": round(time.monotonic() - t, 1), "wall_s": round(time.monotonic() - started, 1),
            "outcome": cmp.stdout.strip().splitlines()[0] if cmp.stdout.strip() else cmp.stderr[-300:]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=6)
    p.add_argument("--block-requests", type=int, default=50)
    p.add_argument("--cases", default=",".join(c for c in CASES if c != "aa"), help="comma-separated subset of " + ", ".join(CASES))
    p.add_argument("--no-separate", action="store_true", help="skip the separate-runs timing")
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ab-proofs-") as tmp:
        folder = Path(tmp)
        for case in args.cases.split(","):
            rows.append(_ab(folder, case, args.pairs, args.block_requests))
            print(json.dumps(rows[-1]), flush=True)
        if not args.no_separate:
            ab_side = args.pairs * args.block_requests
            rows.append(_separate(folder, ab_side))
            print(json.dumps(rows[-1]), flush=True)
    print("\n| case | exit (expected) | pairs run | outcome | wall s | regressed figures | outside CPU A / B | "
          "B blocks: slowed / requests |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        starts = ", ".join(f"{a}/{b}" for a, b in r.get("slowed_per_start", [])) or "-"  # type: ignore[attr-defined]
        print(f"| {r['case']} | {r['exit']} ({r.get('expected', '-')}) | {r.get('pairs', '-')} | {r.get('outcome')} | "
              f"{r['wall_s']} | {r.get('n_regressed', '-')} | {r.get('outside_cpus', '-')} | {starts} |")
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
