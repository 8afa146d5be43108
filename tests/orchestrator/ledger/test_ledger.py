"""Tests for `aqbench ledger`: an inventory written by `aqbench inventory` on a fixture checkout, joined
with small qualify journals; the closing rules, named runs, variants, and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from inventory_support import NEW, main, manifests
from ledger_support import DATASET, REF, ROOT, inventory, ledger, line, qualify_journal, ref_row

from orchestrator.base.errors import UsageError
from orchestrator.events import (
    CapabilityProbed,
    HttpExchange,
    TransportEvidence,
)
from orchestrator.spine.journal import encode_event


class TestClosing:
    def test_without_runs_the_unrun_checkpoints_block_closing(self, tmp_path: Path) -> None:
        """Configured but never run (planned) checkpoints are listed as blockers; evidence-backed
        unsupported and blocked rows are final from the inventory itself."""
        code, led, md = ledger(tmp_path, inventory(tmp_path, configure_aqa=True))
        assert code == 1 and not led.can_close
        assert led.blockers == ["acme/aqaish-1b: unrun: configured but never run",
                                "aqbench/reference-cascade: unrun: configured but never run"]
        gem = line(led, "acme/gemmaish-e4b")
        assert (gem.status, gem.final, gem.source) == ("blocked", True, "inventory") and gem.evidence
        assert line(led, "acme/not-in-trtmc").evidence == ["bench.toml inventory.candidates"]
        assert "**Can the group close? no.** 9 of 11 checkpoints" in md
        assert "- acme/aqaish-1b: unrun: configured but never run" in md

    def test_every_row_accounted_can_close(self, tmp_path: Path) -> None:
        """With the reference model qualified by a run and every other row final, the group can close;
        the line cites the run and its journal."""
        run = qualify_journal(tmp_path / "runs" / "q1", 100, [ref_row()])
        code, led, md = ledger(tmp_path, inventory(tmp_path, configure_aqa=False), run)
        assert code == 0 and led.can_close and led.blockers == []
        ref = line(led, REF)
        assert (ref.status, ref.final, ref.source, ref.run.run_id) == ("aiperf-qualified", True, "run q1", "q1")
        assert ref.evidence == [f"{run / 'events.jsonl'} (model reference-audioqa)"]
        assert "**Can the group close? yes.** 11 of 11 checkpoints" in md
        assert led.dataset_identity == DATASET

    def test_a_failed_row_blocks_until_fixed_and_rerun(self, tmp_path: Path) -> None:
        """The owners' rule: an unresolved failure cannot close the group, with or without its reason; a
        newer qualified run of the checkpoint resolves it."""
        inv = inventory(tmp_path, configure_aqa=False)
        bare = qualify_journal(tmp_path / "runs" / "bare", 100, [ref_row("failed", failed_stage="aiperf")])
        code, led, _ = ledger(tmp_path, inv, bare)
        assert code == 1 and led.blockers == [
            "aqbench/reference-cascade: failed at aiperf in run bare: no reason given; fix it and rerun"]
        why = qualify_journal(tmp_path / "runs" / "why", 200,
                              [ref_row("failed", failed_stage="correctness", reason="arm:audio 5/8 < 0.9")])
        code, led, _ = ledger(tmp_path, inv, bare, why)
        assert code == 1 and line(led, REF).reason == "arm:audio 5/8 < 0.9"
        assert led.blockers == ["aqbench/reference-cascade: failed at correctness in run why: arm:audio 5/8 < 0.9; "
                                "fix it and rerun"]
        assert [(r.run_id, r.note) for r in line(led, REF).other_runs] == [("bare", "superseded by run why")]
        fixed = qualify_journal(tmp_path / "runs" / "fixed", 300, [ref_row()])
        code, led, _ = ledger(tmp_path, inv, bare, why, fixed)
        assert code == 0 and line(led, REF).run.run_id == "fixed"

    def test_unsupported_or_blocked_from_a_run_counts_only_with_its_evidence(self, tmp_path: Path) -> None:
        """A run's `blocked` row without capability evidence blocks closing; the inventory's own verdicts keep
        counting with theirs."""
        inv = inventory(tmp_path, configure_aqa=False)
        run = qualify_journal(tmp_path / "runs" / "b", 100, [ref_row("blocked", failed_stage="capability",
                                                                     reason="input_audio rejected")])
        code, led, _ = ledger(tmp_path, inv, run)
        assert code == 1 and led.blockers == [
            "aqbench/reference-cascade: run b says `blocked` without its capability evidence"]
        with_evidence = qualify_journal(tmp_path / "runs" / "e", 200, [ref_row(
            "blocked", failed_stage="capability", reason="input_audio rejected")])
        probe = CapabilityProbed(seq=3, ts_ns=201, model="reference-audioqa", check="transport", passed=False,
                                 reason="input_audio rejected (400)", evidence=TransportEvidence(
                                     with_audio=HttpExchange(status=400, body='{"error": {}}'),
                                     without_audio=HttpExchange(status=200, body="{}")))
        journal = with_evidence / "events.jsonl"
        docs = [json.loads(ln) for ln in journal.read_text().splitlines()]
        docs.insert(2, json.loads(encode_event(probe)))
        journal.write_text("".join(json.dumps({**d, "seq": n}) + "\n" for n, d in enumerate(docs, 1)))
        code, led, _ = ledger(tmp_path, inv, run, with_evidence)
        assert code == 0 and (line(led, REF).status, line(led, REF).run.run_id) == ("blocked", "e")

    def test_a_stage_short_of_final_blocks_and_an_interrupted_newer_run_does_not_undo(self, tmp_path: Path) -> None:
        """family-validated is not final; a newer run without a final status leaves an older final one counting."""
        inv = inventory(tmp_path, configure_aqa=False)
        partway = qualify_journal(tmp_path / "runs" / "fv", 100, [ref_row("family-validated")])
        code, led, _ = ledger(tmp_path, inv, partway)
        assert code == 1 and led.blockers == [
            "aqbench/reference-cascade: run fv ended it `family-validated`, not a final status"]
        done = qualify_journal(tmp_path / "runs" / "ok", 50, [ref_row()])
        code, led, _ = ledger(tmp_path, inv, partway, done)
        assert code == 0 and line(led, REF).run.run_id == "ok"
        assert [(r.run_id, r.note) for r in line(led, REF).other_runs] == [
            ("fv", "newer, without a final status; run ok counts")]


    def test_unreadable_manifests_and_unclassified_rows_block(self, tmp_path: Path) -> None:
        """An inventory that does not account for everything cannot close: each error and each
        unclassified row is listed."""
        odd = {"name": "odd", "hf_id": "acme/odd", "family": "odd", "test_input_audio": "x.wav"}
        inv = inventory(tmp_path, configure_aqa=False, broken=True, accounted=False,
                        extra_files={NEW.format(fam="odd", name="odd"): odd})
        run = qualify_journal(tmp_path / "runs" / "q1", 100, [ref_row()])
        code, led, _ = ledger(tmp_path, inv, run)
        assert code == 1
        assert [b.split(":")[0] for b in led.blockers] == ["acme/odd", "inventory", "inventory"]
        assert led.blockers[0].startswith("acme/odd: the inventory does not account for it: capability unknown")
        assert any(b.startswith("inventory: unreadable manifest families/brokenish/tests/manifests/brokenish.json: "
                                "not valid JSON") for b in led.blockers)


class TestNamedRuns:
    def test_another_trtmc_revision_is_named_and_not_counted(self, tmp_path: Path) -> None:
        """A run recording another TRTMC commit than the inventory's is named; its row does not count."""
        inv = inventory(tmp_path, configure_aqa=False, git_commit=True)
        commit = json.loads(inv.read_text())["source"]["commit"]
        other = qualify_journal(tmp_path / "runs" / "old", 100, [ref_row()],
                                tool_versions={"trtmc_commit": "0123456789abcdef"}, server_kind="trtmc-server")
        code, led, _ = ledger(tmp_path, inv, other)
        assert code == 1
        [run] = led.runs
        assert run.named == [f"made against TRTMC revision 0123456789ab, not the inventory's {commit[:12]}"]
        assert line(led, REF).blockers == ["unrun: configured but never run"]
        assert line(led, REF).other_runs[0].note.startswith("not counted: made against TRTMC revision")
        same = qualify_journal(tmp_path / "runs" / "new", 200, [ref_row()],
                               tool_versions={"trtmc_commit": commit}, server_kind="trtmc-server")
        assert ledger(tmp_path, inv, other, same)[0] == 0

    def test_another_dataset_identity_is_named(self, tmp_path: Path) -> None:
        """With the ledger's dataset pinned, a run on another dataset is named and not counted."""
        inv = inventory(tmp_path, configure_aqa=False)
        run = qualify_journal(tmp_path / "runs" / "q", 100, [ref_row()], dataset="e" * 64)
        code, led, _ = ledger(tmp_path, inv, run, extra=["--dataset-identity", DATASET])
        assert code == 1
        assert led.runs[0].named == [f"another dataset identity ({'e' * 12}, the ledger's is {'d' * 12})"]

    def test_load_only_runs_are_listed_not_counted(self, tmp_path: Path) -> None:
        """A run-aiperf run measures load: its row is listed under rows not counted."""
        inv = inventory(tmp_path, configure_aqa=False)
        run = qualify_journal(tmp_path / "runs" / "load", 100, [ref_row()], command="run-aiperf")
        code, _, md = ledger(tmp_path, inv, run)
        assert code == 1 and "not counted: `run-aiperf` measures load, it does not qualify" in md

    def test_rows_matching_no_checkpoint_are_listed(self, tmp_path: Path) -> None:
        """A run row for a checkpoint the inventory lacks is kept in `outside`, never dropped."""
        inv = inventory(tmp_path, configure_aqa=False)
        run = qualify_journal(tmp_path / "runs" / "q", 100, [ref_row(), {"model": "x", "checkpoint": "acme/x",
                                                                        "status": "aiperf-qualified"}])
        led = ledger(tmp_path, inv, run)[1]
        assert [(r.model, r.note) for r in led.outside] == [("x", "matches no checkpoint of the inventory")]


class TestVariants:
    def test_variant_runs_are_listed_apart_and_l0_only_blocks(self, tmp_path: Path) -> None:
        """A run of an L0 profile is listed under its variant, never as a model, and qualifying only the
        L0 profile leaves the checkpoint blocking."""
        aqa = {k: v for k, v in manifests()[NEW.format(fam="aqaish", name="aqaish-1b")].items()}
        l0 = {**aqa, "name": "aqaish-1b-l0"}
        inv = inventory(tmp_path, configure_aqa=True,
                        extra_files={NEW.format(fam="aqaish", name="aqaish-1b-l0"): l0})
        run = qualify_journal(tmp_path / "runs" / "l0", 100, [
            ref_row(), {"model": "aqa-l0", "checkpoint": "acme/aqaish-1b", "profile": "aqaish-1b-l0",
                        "status": "aiperf-qualified"}])
        code, led, md = ledger(tmp_path, inv, run)
        assert code == 1
        [variant] = [v for v in led.variants if v.profile == "aqaish-1b-l0"]
        assert variant.kinds == ["l0-ci-tier"] and [r.run_id for r in variant.runs] == ["l0"]
        assert line(led, "acme/aqaish-1b").blockers == [
            "unrun: configured but never run", "qualified only on the L0/partial profile aqaish-1b-l0"]
        assert len(led.lines) == 11, "a variant is never counted as a model"
        assert "## Variants (never counted as models)" in md


class TestInput:
    def test_a_restructured_inventory_reads_defensively(self, tmp_path: Path) -> None:
        """`class` instead of capability_class, variants inside rows with a differing axis and an L0 tier,
        and unknown fields: the ledger still classes, lists variants apart and blocks on the L0-only run."""
        inv = inventory(tmp_path, configure_aqa=False)
        data = json.loads(inv.read_text())
        by_ckpt: dict[str, list[dict[str, Any]]] = {}
        for v in data.pop("variants"):
            by_ckpt.setdefault(v["checkpoint"], []).append(
                {"profile": v["profile"], "kinds": v["kinds"], "differing_axis": "tier" if "l0" in v["profile"]
                 else v["kinds"][0], "tier": "L0" if v["profile"].endswith("-l0") else ""})
        for r in data["rows"]:
            r["class"] = r.pop("capability_class")
            r["variants"] = by_ckpt.get(r["checkpoint"], [])
            r["owner_status"] = "open"
        data["rows"] = [{**r, "status": "planned"} if r["checkpoint"] == "acme/whisperish-tiny" else r
                        for r in data["rows"]]
        inv.write_text(json.dumps(data))
        run = qualify_journal(tmp_path / "runs" / "l0", 100, [ref_row(), {
            "model": "w", "checkpoint": "acme/whisperish-tiny", "profile": "whisperish-tiny-fp16-l0",
            "status": "aiperf-qualified"}])
        code, led, md = ledger(tmp_path, inv, run)
        assert code == 1 and line(led, "acme/whisperish-tiny").capability_class == "transcription-only"
        [l0] = [v for v in led.variants if v.profile == "whisperish-tiny-fp16-l0"]
        assert l0.differing_axis == "tier" and [r.run_id for r in l0.runs] == ["l0"]
        assert line(led, "acme/whisperish-tiny").blockers == [
            "unrun: configured but never run", "qualified only on the L0/partial profile whisperish-tiny-fp16-l0"]
        assert "| acme/whisperish-tiny | whisperish-tiny-fp16-l0 | l0-ci-tier | tier |" in md

    def test_bad_inputs_are_usage_errors(self, tmp_path: Path) -> None:
        """A missing inventory, a file that is not one, and a folder without a journal are exit-2 errors."""
        with pytest.raises(UsageError, match="cannot read the inventory"):
            main(["ledger", "--inventory", str(tmp_path / "none.json")])
        (tmp_path / "x.json").write_text('{"rows": [{"status": "blocked"}]}')
        with pytest.raises(UsageError, match="a row has no checkpoint"):
            main(["ledger", "--inventory", str(tmp_path / "x.json")])
        inv = inventory(tmp_path, configure_aqa=False)
        with pytest.raises(UsageError, match="no run journal here") as info:
            main(["ledger", "--inventory", str(inv), str(tmp_path)])
        assert info.value.exit_code == 2

    def test_cli_exit_codes_in_a_subprocess(self, tmp_path: Path) -> None:
        """The real CLI exits 1 when the group cannot close and 2 on bad input; --help states the codes."""
        inv = inventory(tmp_path, configure_aqa=True)
        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "orchestrator", "--log-format", "json", *args],
                                  capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
        proc = cli("ledger", "--inventory", str(inv))
        assert proc.returncode == 1 and "## What blocks closing" in proc.stdout
        assert cli("ledger", "--inventory", str(tmp_path / "nope.json")).returncode == 2
        help_text = " ".join(cli("ledger", "--help").stdout.split())
        assert "Exit codes: 0 the group can close, 1 it cannot" in help_text and "2 bad input" in help_text
