"""End to end: `aqbench compare` over two real `aqbench run-aiperf` runs of the same clean reference server
(A/A): no figure may be `regressed`, and the deterministic server's answers match item by item."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from reference_run import ROOT, CleanRun

pytestmark = [pytest.mark.aiperf, pytest.mark.slow, pytest.mark.timeout(600)]


def test_aa_two_clean_runs_never_regress(aa_runs: tuple[CleanRun, CleanRun], tmp_path: Path) -> None:
    """A/A (tests/conftest.py's two clean run-aiperf runs, made at once): every figure is unchanged or
    inconclusive, no answer changed, exit 0; the reports are written."""
    for run in aa_runs:
        assert run.returncode == 0, run.stderr[-3000:]
    a, b = (run.dir for run in aa_runs)
    # Latency tolerance 100 %: two runs on this shared 2-core machine (load average ~10 from other work)
    # meet different load. Measured A/A pairs here differed per item by 10 % (client) and 30 % (handler,
    # interval -40 % to -15 %): real differences of conditions, not of servers, which a 5 % tolerance
    # rightly calls changes. Every other tolerance is bench.toml's; the 5 % latency level is checked on
    # recorded journals in tests/orchestrator/compare/test_compare.py.
    config = tmp_path / "bench.toml"
    # The tail share reads the same difference of conditions as a share of requests: 0.5 is as lax.
    config.write_text((ROOT / "bench.toml").read_text().replace("latency_tolerance = 0.05", "latency_tolerance = 1.0")
                      .replace("tail_tolerance = 0.05", "tail_tolerance = 0.5"))
    proc = subprocess.run([sys.executable, "-m", "orchestrator", "compare", str(a), str(b), "--out", str(tmp_path),
                           "--config", str(config)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((tmp_path / "compare.json").read_text())
    [model] = result["models"]
    changes = {f["key"]: f["change"] for f in model["figures"]}
    assert set(changes.values()) <= {"unchanged", "inconclusive"}, changes
    assert {"latency.client.p50", "latency.model_call.p99", "latency.model_call.item_ratio", "throughput",
            "errors.all", "completeness.aiperf"} <= set(changes)
    assert model["paired"] and model["deterministic"] and model["shared_items"] > 0
    assert model["changed_answers"] == [] and model["answers_compared"] > 0
    p50 = next(f for f in model["figures"] if f["key"] == "latency.model_call.p50")
    assert p50["n_baseline"] == p50["n_candidate"] == 40
    assert not [r for r in result["provenance"] if r["blocks"]]
    html = (tmp_path / "compare.html").read_text()
    assert 'data-chart="cdf-client"' in html and 'data-chart="cdf-model_call"' in html
