"""Ray's start and stop in `aqbench campaign`: a local Ray per campaign (no --address) against joining a head
that is already running (`--address`), measured side by side in one run.

Each round runs the same one-model campaign twice, in alternating order: once on the local default (the
driver starts Ray on 127.0.0.1 and stops it at the end), once joined to a head started beforehand for the
whole run (ray.cluster_utils on 127.0.0.1, no dashboard: what `ray start --head` leaves running; its own
start and stop are printed apart, paid once rather than per campaign). The model is a stand-in that ends at
capability (a scripted server with no chat route, ready at once), so each wall is Ray's cost plus a few
seconds of qualify. From each campaign's journal: start = process start to `campaign_started`, stop =
`campaign_finished` to process exit (both include Python's start and imports, the same in either mode),
inside = between the two events.

Run: flock /tmp/aqbench-heavy.lock .venv/bin/python bench/ray_join.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from campaign import make_config  # noqa: E402  (bench/ is on sys.path as the script's folder)

from adapters.ray.loopback import LOOPBACK_ENV, pin_to_loopback  # noqa: E402

pin_to_loopback()  # before Ray is imported: the head listens on 127.0.0.1 only

from orchestrator.campaign.events import CampaignFinished, CampaignStarted  # noqa: E402
from orchestrator.campaign.journal import read_campaign  # noqa: E402


def campaign(cfg: Path, address: str | None) -> dict[str, float]:
    """One campaign; seconds of start, inside and stop (see the module docstring) and the whole wall."""
    env = dict(os.environ)
    if address is None:  # the local default, as a user runs it: none of this script's Ray settings
        for key in ("RAY_ADDRESS", *LOOPBACK_ENV):
            env.pop(key, None)
    runs = cfg.parent / "runs"
    before = set(runs.glob("campaign-*")) if runs.exists() else set()
    argv = [sys.executable, "-m", "orchestrator", "--log-level", "warning", "campaign", "--config", str(cfg),
            *(["--address", address] if address else [])]
    t0 = time.time_ns()
    out = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    t1 = time.time_ns()
    if out.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} exited {out.returncode}:\n{out.stderr[-3000:]}")
    [folder] = set(runs.glob("campaign-*")) - before
    events = read_campaign(folder / "campaign.jsonl")
    started = next(e for e in events if isinstance(e, CampaignStarted))
    finished = next(e for e in events if isinstance(e, CampaignFinished))
    return {"start": (started.unix_ns - t0) / 1e9, "inside": (finished.unix_ns - started.unix_ns) / 1e9,
            "stop": (t1 - finished.unix_ns) / 1e9, "wall": (t1 - t0) / 1e9}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="campaigns per mode (alternating order)")
    args = ap.parse_args()
    import ray.cluster_utils

    with tempfile.TemporaryDirectory() as tmp:
        cfg = make_config(Path(tmp), 1, 0.0)
        t0 = time.perf_counter()
        head = ray.cluster_utils.Cluster(initialize_head=True, head_node_args={
            "num_cpus": os.cpu_count() or 1, "include_dashboard": False})
        head_start = time.perf_counter() - t0
        measured: dict[str, list[dict[str, float]]] = {"local": [], "join": []}
        try:
            for i in range(args.rounds):
                order = ("local", "join") if i % 2 == 0 else ("join", "local")
                for mode in order:
                    measured[mode].append(campaign(cfg, None if mode == "local" else head.address))
        finally:
            t0 = time.perf_counter()
            head.shutdown()
            head_stop = time.perf_counter() - t0

    def med(mode: str, what: str) -> float:
        return statistics.median(m[what] for m in measured[mode])

    print(f"one stand-in model per campaign, {args.rounds} campaigns per mode, medians (s); ratio = join / local")
    print("| phase | local Ray (no --address) | joined (--address) | ratio |\n|---|---|---|---|")
    for what, label in (("start", "start: process start to campaign_started"),
                        ("stop", "stop: campaign_finished to process exit"),
                        ("inside", "inside: campaign_started to campaign_finished"), ("wall", "whole wall")):
        local, join = med("local", what), med("join", what)
        print(f"| {label} | {local:.1f} | {join:.1f} | {join / local:.2f} |")
    spread = {mode: [round(m["wall"], 1) for m in runs] for mode, runs in measured.items()}
    print(f"walls per campaign: {spread}")
    print(f"the running head itself (once, not per campaign): start {head_start:.1f} s, stop {head_stop:.1f} s")


if __name__ == "__main__":
    main()
