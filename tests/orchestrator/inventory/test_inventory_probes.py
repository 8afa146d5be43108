"""`aqbench inventory --probe`: qualify journals upgrade, downgrade or add to the audit's rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from config_support import make_config
from inventory_support import full_audit, row

from orchestrator.base.errors import InventoryError
from orchestrator.events import (
    CapabilityProbed,
    HttpExchange,
    ModelResult,
    RunFinished,
    RunStarted,
    TransportEvidence,
)
from orchestrator.inventory import read_probes
from orchestrator.spine.journal import encode_event


def write_journal(run_dir: Path, events: list[Any]) -> Path:
    run_dir.mkdir(parents=True)
    with (run_dir / "events.jsonl").open("wb") as fh:
        for ev in events:
            fh.write(encode_event(ev) + b"\n")
    return run_dir


def qualify_run(run_dir: Path, ts_ns: int, results: list[tuple[str, str, str, str]],
                transport: dict[str, bool]) -> Path:
    """A qualify journal: (model, checkpoint, status, failed_stage) results and transport checks."""
    models = [{"name": m, "checkpoint": c, "profile": "", "revision": ""} for m, c, _, _ in results]
    events: list[Any] = [RunStarted(run_id=run_dir.name, ts_ns=ts_ns, seq=0, command="qualify",
                                    config=make_config(models=models))]
    for seq, (model, passed) in enumerate(transport.items(), start=1):
        evidence = None if passed else TransportEvidence(
            with_audio=HttpExchange(status=400, body='{"error": {"code": "invalid_request"}}'),
            without_audio=HttpExchange(status=200))
        events.append(CapabilityProbed(seq=seq, model=model, check="transport", passed=passed,
                                       reason="" if passed else "input_audio answered 400; text-only 200",
                                       evidence=evidence))
    for model, ckpt, status, stage in results:
        events.append(ModelResult(seq=len(events), model=model, status=status, failed_stage=stage,
                                  row={"checkpoint": ckpt, "profile": "", "revision": ""}))  # type: ignore[arg-type]
    events.append(RunFinished(seq=len(events), status="ok"))
    return write_journal(run_dir, events)


class TestProbes:
    def test_probe_upgrades_to_aiperf_qualified(self, tmp_path: Path) -> None:
        """A qualify run that ended aiperf-qualified upgrades the planned row, citing the journal line."""
        run = qualify_run(tmp_path / "q1", 10, [("aqa", "acme/aqaish-1b", "aiperf-qualified", "")], {"aqa": True})
        r = row(full_audit(probes=read_probes(run)), "acme/aqaish-1b")
        assert (r.status, r.gap) == ("aiperf-qualified", "")
        assert any(e.claim == "probe:result:aiperf-qualified" and e.field == "seq 2 (model_result)"
                   for e in r.evidence)

    def test_failures_after_capability_keep_earlier_stages(self, tmp_path: Path) -> None:
        """Failed at correctness means implemented; failed at aiperf means family-validated."""
        run = qualify_run(tmp_path / "q1", 10, [("aqa", "acme/aqaish-1b", "failed", "correctness"),
                                                ("g", "acme/gemmaish-e4b", "failed", "aiperf")], {})
        inv = full_audit(probes=read_probes(run))
        assert row(inv, "acme/aqaish-1b").status == "implemented"
        assert row(inv, "acme/gemmaish-e4b").status == "family-validated"

    def test_live_400_outranks_manifest_and_newer_run_wins(self, tmp_path: Path) -> None:
        """A transport 400 makes an audio-qa row unsupported; a newer qualified run supersedes it."""
        old = qualify_run(tmp_path / "old", 10, [("g", "acme/gemmaish-e4b", "unsupported", "")], {"g": False})
        r = row(full_audit(probes=read_probes(old)), "acme/gemmaish-e4b")
        assert (r.status, r.gap) == ("unsupported", "live probe (old): input_audio answered 400; text-only 200")
        assert any(e.claim == "probe:transport:failed" and e.value.with_audio.status == 400 for e in r.evidence)
        new = qualify_run(tmp_path / "new", 20, [("g", "acme/gemmaish-e4b", "family-validated", "")], {"g": True})
        r = row(full_audit(probes=read_probes(old) + read_probes(new)), "acme/gemmaish-e4b")
        assert r.status == "family-validated"

    def test_interrupted_run_with_failed_transport_is_evidence(self, tmp_path: Path) -> None:
        """Without a ModelResult, a failed transport check alone yields unsupported, mapped via the config."""
        run = write_journal(tmp_path / "cut", [
            RunStarted(run_id="cut", ts_ns=5, config=make_config(models=[{"name": "g", "checkpoint": "acme/gemmaish-e4b"}])),
            CapabilityProbed(seq=1, model="g", check="transport", passed=False,
                             evidence=TransportEvidence(with_audio=HttpExchange(status=400))),
        ])
        [outcome] = read_probes(run)
        assert (outcome.checkpoint, outcome.status, outcome.reason) == (
            "acme/gemmaish-e4b", "unsupported", "input_audio answered 400")

    def test_probe_for_unknown_checkpoint_is_listed(self, tmp_path: Path) -> None:
        """A probe of a checkpoint the checkout does not hold is reported, not dropped."""
        run = qualify_run(tmp_path / "ref", 1, [("reference-audioqa", "aqbench/reference-cascade",
                                                 "aiperf-qualified", "")], {})
        rec = full_audit(probes=read_probes(run)).reconciliation
        assert rec.probes_unmatched == [f"reference-audioqa (aqbench/reference-cascade) in {run}"]

    def test_missing_journal_is_an_inventory_error(self, tmp_path: Path) -> None:
        """--probe on a folder without events.jsonl says what it expected."""
        with pytest.raises(InventoryError, match="no journal; --probe takes a qualify run folder"):
            read_probes(tmp_path)
