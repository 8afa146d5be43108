"""AIPerf handovers in a real soak at a fast rate: memory-cued (or timed) handovers, their gaps, and the
load generator's memory (`aiperf_rss`) they bound.

Runs a real `aqbench soak` (real AIPerf 0.13.0) against the fast scripted stub server (tests/data/stub_server.py,
2 ms per answer; the config of bench/aiperf_processes.py) in rate mode with `[soak] aiperf_handover_mib` (and
`aiperf_handover_every_s`) set, then prints each journaled handover (why, ready after launch, gap, what the
predecessor sent), the requests in all, and the final window_gap, accounting and aiperf_rss verdicts.
Heavy: hold /tmp/aqbench-heavy.lock.

    flock /tmp/aqbench-heavy.lock .venv/bin/python bench/soak_handover.py --duration 600 --window 60 --rate 50 \\
        --handover-mib 8
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aiperf_processes import REPO, _config  # the same stub-server config


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=600.0)
    ap.add_argument("--window", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=50.0)
    ap.add_argument("--handover-mib", type=float, default=8.0)
    ap.add_argument("--handover-every", type=float, default=0.0)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="aqb-handover-"))
    config = _config(folder, args.duration, args.window)
    config.write_text(config.read_text().replace(
        "[soak]\n", f"[soak]\naiperf_handover_mib = {args.handover_mib}\n"
                    f"aiperf_handover_every_s = {args.handover_every}\n", 1))
    rc = subprocess.run([sys.executable, "-m", "orchestrator", "--log-level", "warning", "soak", "--config",
                         str(config), "--rate", f"{args.rate:g}"], cwd=REPO, stdout=subprocess.DEVNULL).returncode
    [run_dir] = sorted((folder / "runs").glob("*soak-*"))
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]
    started = {e["window"]: e["ts_ns"] for e in events if e["kind"] == "aiperf_started"}
    print(f"soak exit {rc}: {run_dir}")
    for h in (e for e in events if e["kind"] == "soak_handover"):
        ready_s = (h["ready_unix_ns"] - started[h["successor"]]) / 1e9
        due = h.get("due_unix_ns")
        late = (f", first request {(h['first_request_unix_ns'] - due) / 1e6:+.1f} ms from its due slot"
                if due and h.get("first_request_unix_ns") else "")
        print(f"  {h['predecessor']} -> {h['successor']}: {h['reason']}; ready {ready_s:.1f} s after launch, "
              f"gap {h['gap_s']} s, predecessor sent {h['sent']}{late}")
    for e in events:
        if e["kind"] == "warned" and e["code"].startswith("soak_handover"):
            print(f"  warned: {e['message']}")
    requests = sum(e["summary"]["issued"] for e in events if e["kind"] == "soak_window_closed")
    print(f"  profiling requests in the windows: {requests}")
    for e in events:
        if e["kind"] == "soak_verdict" and e["final"] and e["metric"] in ("window_gap", "accounting", "aiperf_rss"):
            print(f"  {e['metric']}: {e['outcome']}: {e['reason']}")
    rss = [(e["ts_ns"], e["pid"], e["rss_bytes"]) for e in events
           if e["kind"] == "process_sampled" and e["role"] == "aiperf"]
    if rss:
        print(f"  aiperf tree RSS (MiB): min {min(r[2] for r in rss) / 2**20:.1f} max {max(r[2] for r in rss) / 2**20:.1f} "
              f"over {len({r[1] for r in rss})} process(es)")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
