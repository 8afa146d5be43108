"""The run key: what it covers, how a change is named, and where it decides: the ledger counts a row only
under the current key (the configured one, else the newest row's) and a campaign's --resume reruns a model
whose final row has another key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
from config_support import make_config
from ledger_support import REF, inventory, ledger, line, qualify_journal, ref_row
from runkey_support import key

from orchestrator.campaign.events import ModelFinished
from orchestrator.campaign.resume import still_current
from orchestrator.config import load_config
from orchestrator.events import ModelResult, ResultRow, RunKey
from orchestrator.ledger import build_ledger, load_inventory, read_run
from orchestrator.runkey.current import current_keys
from orchestrator.runkey.digests import config_digest, key_changes, rekeyed
from orchestrator.spine.journal import encode_event, read_journal

ROOT = Path(__file__).resolve().parents[3]


class TestKey:
    def test_the_configuration_digest_covers_the_models_inputs_only(self) -> None:
        """Another model, [run] or [campaign] leave a model's digest; its workload or its own entry change it."""
        one = make_config(models=[{"name": "m1"}])
        two = make_config(models=[{"name": "m1"}, {"name": "m2"}], run={"name": "elsewhere"},
                          campaign={"max_retries": 5})
        assert config_digest(one, one.models[0]) == config_digest(two, two.models[0])
        more = make_config(models=[{"name": "m1"}], workload={"requests": 99})
        assert config_digest(one, one.models[0]) != config_digest(more, more.models[0])
        other = make_config(models=[{"name": "m1", "precision": "fp8"}])
        assert config_digest(one, one.models[0]) != config_digest(other, other.models[0])

    def test_changes_are_named_and_equal_keys_have_none(self) -> None:
        """What changed is listed by input, digests shortened; the same inputs give the same digest."""
        assert key().digest == key().digest and len(key().digest) == 16 and key_changes(key(), key()) == []
        assert key_changes(key(), key(aiperf_version="0.14.0", dataset_identity="e" * 64)) == [
            f"dataset {'d' * 12} -> {'e' * 12}", "AIPerf version 0.13.0 -> 0.14.0"]
        assert key_changes(None, key()) == ["the row records no run key (written before aqbench recorded keys)"]


class TestLedger:
    def test_a_row_under_an_older_key_is_stale_with_what_changed(self, tmp_path: Path) -> None:
        """The newest keyed row sets the current key; an older qualified row under another AIPerf does not
        count, and says why."""
        inv = inventory(tmp_path, configure_aqa=False)
        old = qualify_journal(tmp_path / "runs" / "old", 100, [ref_row(keyed_by=msgspec.to_builtins(key()))])
        new = qualify_journal(tmp_path / "runs" / "new", 200, [ref_row(
            "failed", failed_stage="correctness", reason="arm:audio 5/8 < 0.9",
            keyed_by=msgspec.to_builtins(key(aiperf_version="0.14.0")))])
        _, led, _ = ledger(tmp_path, inv, old, new)
        ref = line(led, REF)
        assert (ref.status, ref.run.run_id) == ("failed", "new")
        [(run_id, note)] = [(r.run_id, r.note) for r in ref.other_runs]
        assert run_id == "old" and note == (f"stale, not counted: run key {key().digest} is not the current "
                                            f"{key(aiperf_version='0.14.0').digest}: AIPerf version 0.13.0 -> 0.14.0")

    def test_only_stale_rows_block_closing(self, tmp_path: Path) -> None:
        """Against the configured key now, a checkpoint whose only row was made under another key cannot close."""
        inv = load_inventory(inventory(tmp_path, configure_aqa=False))
        cfg = load_config(ROOT / "bench.toml")
        now = current_keys(cfg)["reference-audioqa"]
        stale = rekeyed(now, config_sha256="0" * 64)
        run = qualify_journal(tmp_path / "runs" / "q", 100, [ref_row(keyed_by=msgspec.to_builtins(stale))])
        led = build_ledger(inv, [read_run(run)], keys={"reference-audioqa": now})
        assert not led.can_close
        assert led.blockers == [f"{REF}: only stale rows (run q: run key {stale.digest} is not the current "
                                f"{now.digest}: configuration {'0' * 12} -> {now.config_sha256[:12]}); rerun it"]
        fresh = qualify_journal(tmp_path / "runs" / "q2", 50, [ref_row(keyed_by=msgspec.to_builtins(now))])
        led = build_ledger(inv, [read_run(run), read_run(fresh)], keys={"reference-audioqa": now})
        assert led.can_close and line(led, REF).run.run_id == "q2"

    def test_rows_without_keys_count_as_before_when_no_key_is_known(self, tmp_path: Path) -> None:
        """Journals written before keys existed still close the group when nothing says a key changed."""
        inv = inventory(tmp_path, configure_aqa=False)
        code, led, _ = ledger(tmp_path, inv, qualify_journal(tmp_path / "runs" / "q1", 100, [ref_row()]))
        assert code == 0 and led.can_close


def _campaign(tmp_path: Path, row_key: RunKey | None) -> tuple[Path, dict[str, ModelFinished]]:
    folder = tmp_path / "campaign-1"
    journal = folder / "models" / "m1" / "events.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_bytes(encode_event(ModelResult(run_id="r", seq=1, ts_ns=1, model="m1", status="aiperf-qualified",
                                                 row=ResultRow(keyed_by=row_key))) + b"\n")
    return folder, {"m1": ModelFinished(model="m1", status="aiperf-qualified", journal="models/m1/events.jsonl")}


class TestResume:
    def test_a_final_row_under_the_current_key_is_skipped(self, tmp_path: Path) -> None:
        """Same key: the model is done; a bundle the driver cannot hash is taken as the row's."""
        folder, done = _campaign(tmp_path, key(bundle_sha256="b" * 64))
        assert still_current(folder, done, {"m1": key(bundle_sha256="b" * 64)}) == (done, {})
        assert still_current(folder, done, {"m1": key()}) == (done, {})

    def test_a_final_row_under_another_key_runs_again_saying_why(self, tmp_path: Path) -> None:
        """Another dataset, or a row without a key: rerun, with what changed."""
        folder, done = _campaign(tmp_path, key())
        assert still_current(folder, done, {"m1": key(dataset_identity="e" * 64)}) == (
            {}, {"m1": f"dataset {'d' * 12} -> {'e' * 12}"})
        folder, done = _campaign(tmp_path / "old", None)
        assert still_current(folder, done, {"m1": key()})[1] == {
            "m1": "the row records no run key (written before aqbench recorded keys)"}


def test_qualify_records_the_key_the_ledger_computes_now(tmp_path: Path) -> None:
    """`qualify --plan` journals each row with its key, and the key computed now from the same bench.toml,
    dataset and installed versions is the same, field by field; the folded report row carries it too."""
    config = tmp_path / "bench.toml"
    config.write_text((ROOT / "bench.toml").read_text())
    proc = subprocess.run([sys.executable, "-m", "orchestrator", "--log-level", "warning", "qualify", "--plan",
                           "--config", str(config)], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [run_dir] = list((tmp_path / "runs").iterdir())
    events, _ = read_journal(run_dir / "events.jsonl")
    [result] = [e for e in events if isinstance(e, ModelResult)]
    now = current_keys(load_config(config))[result.model]
    assert result.row.keyed_by == now and now.aiperf_version and now.dataset_identity
    assert read_run(run_dir).report.rows[0].keyed_by == now
