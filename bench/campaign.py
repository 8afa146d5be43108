"""`aqbench campaign` on one local node against the same models qualified one after another by
`aqbench qualify`, and the lag from a task's journal line to the driver's copy. One run of each.

Models are stand-ins that end at capability after a fixed server start-up delay (a scripted server with
no chat route), so the figures isolate what the campaign adds: Ray's start, one qualify run per model,
streaming, bringing folders back. Run: .venv/bin/python bench/campaign.py [--models 3] [--delay 4]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = ROOT / "tests" / "data" / "servers" / "scripted_server.py"
ITEMS = ["count-beeps-5", "count-beeps-3", "pitch-higher-up", "pitch-lower-up"]


def make_config(folder: Path, models: int, delay_s: float) -> Path:
    """bench.toml with `models` stand-in models on a scripted server and a four-item dataset."""
    src = ROOT / "datasets" / "audioqa-v1"
    data = folder / "mini"
    lines = [ln for ln in (src / "manifest.jsonl").read_text().splitlines() if json.loads(ln)["id"] in ITEMS]
    for ln in lines:
        rel = json.loads(ln)["audio"]
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, data / rel)
    (data / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    argv = ["{python}", str(SCRIPTED), "--startup-delay", str(delay_s), "--host", "{host}", "--port", "{port}",
            "--model-name", "{model}", "--records", "{records}"]
    text = [f'[run]\noutput_dir = "{folder / "runs"}"\n', f'[server]\nkind = "trtmc-server"\nargv = {json.dumps(argv)}\n',
            f'[dataset]\npath = "{data}"\narms = ["audio", "silence"]\n']
    for i in range(models):
        text.append(f'[[models]]\nname = "standin-{i}"\nfamily = "bench"\ncheckpoint = "bench/standin-{i}"\n'
                    f'[models.correctness]\nmin_pass_rate = 0.9\n')
    path = folder / "bench.toml"
    path.write_text("\n".join(text))
    return path


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    wall = time.perf_counter() - t0
    if out.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} exited {out.returncode}:\n{out.stderr[-3000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", type=int, default=3)
    ap.add_argument("--delay", type=float, default=4.0, help="each stand-in server's start-up delay (s)")
    args = ap.parse_args()
    from orchestrator.campaign import fold_campaign
    from orchestrator.campaign.events import AttemptEnded
    from orchestrator.campaign.journal import read_campaign

    with tempfile.TemporaryDirectory() as tmp:
        cfg = make_config(Path(tmp), args.models, args.delay)
        cli = [sys.executable, "-m", "orchestrator", "--log-level", "warning"]
        sequential = timed([*cli, "qualify", "--config", str(cfg)])
        one_at_a_time = timed([*cli, "campaign", "--config", str(cfg), "--max-parallel", "1"])
        parallel = timed([*cli, "campaign", "--config", str(cfg)])
        lags: list[dict[str, float]] = []
        inside: list[float] = []  # campaign_started to campaign_finished: the wall without Ray's start and stop
        for folder in sorted((Path(tmp) / "runs").glob("campaign-*")):
            report = fold_campaign(folder / "campaign.jsonl")
            assert report.accounting.balanced, report.accounting
            inside.append(report.wall_s)
            lags += [e.stream for e in read_campaign(folder / "campaign.jsonl") if isinstance(e, AttemptEnded)]
    lines = int(sum(s["lines"] for s in lags))
    print(f"{args.models} stand-in models, server start-up {args.delay:.1f} s each")
    print("| run | wall s | ratio to qualify |\n|---|---|---|")
    print(f"| `aqbench qualify` (one after another) | {sequential:.1f} | 1.00 |")
    print(f"| `aqbench campaign --max-parallel 1` (local Ray) | {one_at_a_time:.1f} | {one_at_a_time / sequential:.2f} |")
    print(f"| `aqbench campaign` (local Ray, as resources allow) | {parallel:.1f} | {parallel / sequential:.2f} |")
    fixed = one_at_a_time - inside[0]
    print(f"of which Ray's start and stop (outside campaign_started..finished): {fixed:.1f} s and "
          f"{parallel - inside[1]:.1f} s; one at a time without them: {inside[0]:.1f} s "
          f"({inside[0] / sequential:.2f} of qualify's wall)")
    for minutes in (10, 60):
        seq = minutes * 60.0 * args.models
        print(f"projected ratio at {minutes} min a model, one at a time: {(seq + fixed) / seq:.3f}")
    print(f"stream lag over {lines} lines in {len(lags)} attempts: worst attempt p50 "
          f"{max(s['lag_p50_ms'] for s in lags):.0f} ms, worst p99 {max(s['lag_p99_ms'] for s in lags):.0f} ms, "
          f"max {max(s['lag_max_ms'] for s in lags):.0f} ms")


if __name__ == "__main__":
    main()
