#!/usr/bin/env bash
# aqbench's GPU proofs on a GPU host (docs/gpu.md): doctor, the tests marked gpu, a clean soak with a ballast
# (exit 0) and a GPU-leak soak (exit 1 on server_gpu_memory), each report's GPU section kept.
# Run from the checkout's root:  bench/gpu_host.sh [WHEEL_DIR] [SOAK_DURATION]
# DATASETS: the folder holding audioqa-v2 (default: this checkout's datasets/). STAGES: which of doctor, tests,
# soaks, campaign to run (default all; campaign only where Ray is installed).
# WHEEL_DIR: wheels of what the host lacks (installed into $WORK/site, nothing else touched); OUT: where the
# results go (default runs/gpu-host). Needs python3 with torch or cupy, and nvidia-ml-py.
set -u
ROOT=$(pwd)
WHEELS=${1:-.whl}
DURATION=${2:-150s}
OUT=${OUT:-$ROOT/runs/gpu-host}
WORK=${WORK:-/tmp/aqbench-gpu}
DATASETS=${DATASETS:-$ROOT/datasets}
STAGES=${STAGES:-doctor,tests,soaks,campaign}
stage() { [[ ",$STAGES," == *",$1,"* ]]; }
SITE=$WORK/site
mkdir -p "$OUT" "$WORK"
exec > >(tee -a "$OUT/gpu_host.log") 2>&1
if compgen -G "$WHEELS/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS"/*.whl || exit 3
fi
# The entry point AIPerf finds aqbench's live tap by, as `pip install` of this checkout writes it.
mkdir -p "$SITE/aqbench-0.1.0.dist-info"
printf 'Metadata-Version: 2.1\nName: aqbench\nVersion: 0.1.0\n' > "$SITE/aqbench-0.1.0.dist-info/METADATA"
printf '[aiperf.plugins]\naqbench = adapters.aiperf:plugins.yaml\n' > "$SITE/aqbench-0.1.0.dist-info/entry_points.txt"
export PYTHONPATH="$SITE:$ROOT" PATH="$SITE/bin:$PATH" PYTHONUNBUFFERED=1
# aqbench finds AIPerf's console script beside the interpreter, else on PATH, which a Ray worker does not inherit.
beside=$(dirname "$(python3 -c 'import sys; print(sys.executable)')")/aiperf
[ -e "$beside" ] || ln -s "$SITE/bin/aiperf" "$beside" 2>/dev/null || true
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,power.limit,mig.mode.current --format=csv

# The signal questions of audioqa-v2 (the engine answers them without speech models), with their audio (a
# dataset's files must lie inside its folder).
DATA=$WORK/audioqa-v2-signal
mkdir -p "$DATA/audio"
python3 - "$DATASETS/audioqa-v2" "$DATA" <<'PY'
import json, shutil, sys
from pathlib import Path
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
kinds = {"count", "pitch", "frequency", "duration", "direction", "loudness", "silence", "channel"}
rows = [line for line in (src / "manifest.jsonl").open() if json.loads(line)["kind"] in kinds]
for line in rows:
    shutil.copyfile(src / json.loads(line)["audio"], dst / json.loads(line)["audio"])
(dst / "manifest.jsonl").write_text("".join(rows))
print(f"signal subset: {len(rows)} items")
PY
config() {  # config NAME GPU_ARGS
  sed -e "s|@DATASET@|$DATA|" -e "s|@GPU_ARGS@|$2|" "$ROOT/bench/gpu_host.toml" > "$WORK/$1.toml"
}
config clean '"--gpu-ballast-mib", "1024", "--gpu-work-ms", "20"'
config leak '"--gpu-ballast-mib", "1024", "--gpu-work-ms", "20", "--fault-gpu-leak-mib", "2"'

if stage doctor; then
  echo "== doctor"; python3 -m orchestrator doctor --config "$WORK/clean.toml"; echo "doctor rc=$?"
fi
if stage tests; then
  echo "== tests marked gpu"
  python3 -m pytest --noconftest -p no:cacheprovider -m gpu -q -rs tests/adapters/test_server_sampler.py \
    tests/adapters/test_reference_gpu.py tests/orchestrator/supervision/test_supervisor_gpu.py -s; echo "pytest rc=$?"
fi

soak() {  # soak NAME
  local before; before=$(ls "$WORK/runs" 2>/dev/null)
  python3 -m orchestrator soak --config "$WORK/$1.toml" --duration "$DURATION" --window 30s --rate 4
  local rc=$?
  echo "soak $1 rc=$rc"
  local run; run=$(ls -t "$WORK/runs" | head -1)
  tar -czf "$OUT/$1.tgz" -C "$WORK/runs" "$run"
  sed -n '/^## Verdicts/,/^## Windows/p' "$WORK/runs/$run/soak.md"
}
if stage soaks; then
  echo "== clean soak"; soak clean
  echo "== GPU-leak soak"; soak leak
fi

# A campaign with [models.resources] gpus = 1 on a local Ray, where Ray is installed (its wheel is ~78 MB).
if stage campaign && python3 -c "import ray" 2>/dev/null; then
  echo "== campaign (gpus = 1)"
  python3 -m orchestrator campaign --config "$WORK/clean.toml"
  echo "campaign rc=$?"
  run=$(ls -td "$WORK"/runs/campaign-* 2>/dev/null | head -1)
  [ -n "$run" ] && tar -czf "$OUT/campaign.tgz" -C "$WORK/runs" "$(basename "$run")" && cat "$run/report.md"
fi
