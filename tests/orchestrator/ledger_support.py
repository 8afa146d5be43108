"""An inventory, qualify journals and a ledger run, for the ledger, run-key and publish tests."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
from config_support import make_config
from inventory_support import main, manifests, write_tree

from orchestrator.events import (
    DatasetPhase,
    ModelResult,
    PhaseFinished,
    ResultRow,
    RunFinished,
    RunStarted,
)
from orchestrator.ledger import Ledger
from orchestrator.spine.journal import encode_event

ROOT = Path(__file__).resolve().parents[2]
REF = "aqbench/reference-cascade"
DATASET = "d" * 64

# The inventory's bench.toml, with or without the aqa model (shared with tests/e2e/test_publish_runs.py).
BENCH = (ROOT / "tests/data/configs/inventory-bench.template.toml").read_text()
AQA = (ROOT / "tests/data/configs/aqa-model.toml").read_text()


def inventory(tmp_path: Path, *, configure_aqa: bool, extra_files: dict[str, Any] | None = None,
              git_commit: bool = False, broken: bool = False, accounted: bool = True) -> Path:
    """Run the real `aqbench inventory` over a fixture checkout (without its broken manifests unless
    `broken`) and return its JSON; it exits 0 only when `accounted`."""
    files = {k: v for k, v in manifests().items() if broken or ("brokenish" not in k and "anonymous" not in k)}
    trtmc = write_tree(tmp_path / "trtmc", {**files, **(extra_files or {})})
    if git_commit:
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "fixture"]):
            subprocess.run(["git", "-C", str(trtmc), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                           check=True, capture_output=True)
    bench = tmp_path / "bench.toml"
    bench.write_text(BENCH.format(extra=AQA if configure_aqa else ""))
    out = tmp_path / "inv.json"
    code = main(["inventory", "--trtmc", str(trtmc), "--config", str(bench), "--json", str(out)])
    assert code == (0 if accounted else 1)
    return out


def qualify_journal(run_dir: Path, ts_ns: int, rows: list[dict[str, Any]], *, dataset: str = DATASET,
                    command: str = "qualify", tool_versions: dict[str, str] | None = None,
                    server_kind: str = "reference") -> Path:
    """A qualify journal: the dataset phase, then one ModelResult per row (model, status, checkpoint, ...)."""
    events: list[Any] = [
        RunStarted(run_id=run_dir.name, seq=1, ts_ns=ts_ns, command=command, tool_versions=tool_versions or {},
                   config=make_config(server={"kind": server_kind}, models=[{"name": r["model"]} for r in rows])),
        PhaseFinished(seq=2, ts_ns=ts_ns + 1, phase="dataset", outcome="passed",
                      detail=DatasetPhase(name="audioqa-v1", identity=dataset, items=8)),
    ]
    for r in rows:
        row = {k: v for k, v in r.items() if k not in ("model", "status", "failed_stage")}
        events.append(ModelResult(seq=len(events) + 1, ts_ns=ts_ns + 2, model=r["model"], status=r["status"],
                                  failed_stage=r.get("failed_stage", ""), row=msgspec.convert(row, ResultRow)))
    events.append(RunFinished(seq=len(events) + 1, ts_ns=ts_ns + 3, status="ok"))
    run_dir.mkdir(parents=True)
    (run_dir / "events.jsonl").write_bytes(b"".join(encode_event(e) + b"\n" for e in events))
    return run_dir


def ref_row(status: str = "aiperf-qualified", **kw: Any) -> dict[str, Any]:
    return {"model": "reference-audioqa", "checkpoint": REF, "profile": "reference-cascade-cpu-int8",
            "status": status, **kw}


def ledger(tmp_path: Path, inv: Path, *runs: Path, extra: Sequence[str] = ()) -> tuple[int, Ledger, str]:
    out_json, out_md = tmp_path / "ledger.json", tmp_path / "ledger.md"
    code = main(["ledger", "--inventory", str(inv), *map(str, runs), "--json", str(out_json),
                 "--markdown", str(out_md), *extra])
    return code, msgspec.json.decode(out_json.read_bytes(), type=Ledger), out_md.read_text()


def line(led: Ledger, checkpoint: str) -> Any:
    [found] = [ln for ln in led.lines if ln.checkpoint.lower() == checkpoint.lower()]
    return found

