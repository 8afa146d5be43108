"""Tests for `aqbench publish` without AIPerf: the placeholder rules, the final scan, and the command's
exit codes over small qualify journals (the real runs are in tests/e2e/test_publish_runs.py)."""

from __future__ import annotations

import argparse
import json
import re
import socket
from pathlib import Path

import msgspec
import psutil
import pytest
from ledger_support import inventory, ledger, qualify_journal, ref_row
from runkey_support import key

from orchestrator.base.errors import UsageError
from orchestrator.campaign.events import CampaignStarted
from orchestrator.campaign.journal import CampaignJournal
from orchestrator.commands import publish as publish_command
from orchestrator.config import load_config
from orchestrator.publish.detect import Detectors, MachineFacts, machine_facts
from orchestrator.publish.private import PrivateFacts, Scrubber
from orchestrator.publish.scan import scan_text
from orchestrator.runkey.current import current_keys
from orchestrator.runkey.digests import rekeyed
from orchestrator.spine.redaction import REDACTED

FACTS = PrivateFacts(
    roots={"run-dir": ["/work/runs/q-1"], "venv": ["/work/venv"], "checkout": ["/work"], "home": ["/home/alice"]},
    tmp=["/tmp"], hosts=["gpu-node-7"], users=["alice"], names=["project-x"], secret_values=["s3cr3t-value"],
    allowed_env=["AIPERF_RECORD_EXPORT_BATCH_SIZE"],
)
ROOT = Path(__file__).resolve().parents[3]
DETECTORS = Detectors(MachineFacts(hosts=["gpu-node-7"], users=["alice"]), ["s3cr3t-value"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="aqbench")
    publish_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.func(args))


class TestScrubber:
    def test_paths_go_to_the_most_specific_named_root(self) -> None:
        """A path under the run folder inside the checkout is `<run-dir>`; the venv wins over the checkout."""
        s = Scrubber(FACTS)
        assert s.text("/work/runs/q-1/aiperf/x.json and /work/venv/bin/aiperf and /work/bench.toml") == \
            "<run-dir>/aiperf/x.json and <venv>/bin/aiperf and <checkout>/bench.toml"
        assert s.text("/work2/other") == "/work2/other", "a root matches whole path parts only"
        assert s.text("tokenizer at /home/alice/.cache/tok") == "tokenizer at <home>/.cache/tok"

    def test_temporary_folders_keep_only_their_last_part(self) -> None:
        """`/tmp/pytest-of-alice/p0/mini` says nothing about the run but `mini`."""
        assert Scrubber(FACTS).text("dataset /tmp/pytest-of-alice/p0/mini,") == "dataset <tmp>/mini,"

    def test_names_addresses_ports_and_environment(self) -> None:
        """Host, user and listed names, non-loopback IPs, loopback ports and non-allowed env values go."""
        s = Scrubber(FACTS)
        assert s.text("gpu-node-7 alice project-x 10.1.2.3 127.0.0.1:8123 http://localhost:9000/v1 --port 41265") \
            == "<host> <user> <name> <ip> 127.0.0.1:<port> http://localhost:<port>/v1 --port <port>"
        assert s.text("AIPERF_RECORD_EXPORT_BATCH_SIZE=1 TMPDIR=/tmp/aq-1 CUDA_VISIBLE_DEVICES=0 aiperf") == \
            "AIPERF_RECORD_EXPORT_BATCH_SIZE=1 TMPDIR=<env> CUDA_VISIBLE_DEVICES=<env> aiperf"
        assert s.text("version 1.2.3 and 0.13.0") == "version 1.2.3 and 0.13.0"

    def test_data_scrubs_env_maps_ports_and_secret_keys(self) -> None:
        """In JSON data an `env` mapping keeps allowed values only and `port` numbers go."""
        s = Scrubber(FACTS)
        data = {"env": {"AIPERF_RECORD_EXPORT_BATCH_SIZE": "1", "HOME": "/home/alice"}, "port": 8000,
                "api_key": "abc123456", "argv": ["srv", "--token", "t0k3n-value", "/work/venv/bin/python"]}
        assert s.data(data) == {"env": {"AIPERF_RECORD_EXPORT_BATCH_SIZE": "1", "HOME": "<env>"}, "port": "<port>",
                                "api_key": REDACTED, "argv": ["srv", "--token", REDACTED, "<venv>/bin/python"]}


class TestScan:
    def test_each_kind_is_found_by_line(self) -> None:
        """Absolute paths, host, user and listed names, private IPs and secrets are found; routes are not."""
        text = "\n".join(["ok /v1/chat/completions <run-dir>/x", "/srv/share/a.wav", "on gpu-node-7", "by alice",
                          "for project-x", "at 192.168.0.9 (127.0.0.1 is fine)", "s3cr3t-value",
                          "HF_TOKEN=abcdef123", f"HF_TOKEN={REDACTED}", "Authorization: Basic dXNlcjpwYXNz"])
        found = [(f.line, f.kind) for f in scan_text(text, FACTS, DETECTORS, file="c.md")]
        assert found == [(2, "absolute path"), (3, "host name"), (4, "user name"), (5, "private name"),
                         (6, "IP address"), (7, "known secret value"), (8, "credential setting"),
                         (10, "bearer or basic credential")]

    def test_scrubbed_text_scans_clean(self) -> None:
        """What the Scrubber writes, the scan accepts."""
        text = "/work/runs/q-1/x gpu-node-7 alice 10.0.0.1 s3cr3t-value HF_TOKEN=abcdef123 /tmp/a/b"
        assert scan_text(Scrubber(FACTS).text(text), FACTS, DETECTORS) == []

    def test_this_machines_own_addresses_are_found_public_and_ipv6_included(self) -> None:
        """The host's own addresses, public IPv4 and IPv6 too, are found as whole addresses; the scrubber, given
        them apart, writes `<ip>`, and what it writes scans clean."""
        own = ["192.0.2.2", "2001:db8::7"]
        detectors = Detectors(MachineFacts(addresses=own))
        text = "from 192.0.2.2\nfrom [2001:db8::7]:8000\nnot 192.0.2.20 nor 2001:db8::77 nor 8.8.8.8"
        assert [(d.line, d.kind) for d in detectors.text(text)] == [(1, "IP address"), (2, "IP address")]
        scrubbed = Scrubber(PrivateFacts(addresses=own)).text(text)
        assert scrubbed.splitlines()[:2] == ["from <ip>", "from [<ip>]:8000"] and "2001:db8::77" in scrubbed
        assert detectors.text(scrubbed) == []

    def test_machine_facts_hold_every_interface_address(self) -> None:
        """The scan's facts include each non-loopback address of this machine's interfaces, which a name lookup
        of the host name can miss."""
        ifaces = {a.address.split("%")[0] for addrs in psutil.net_if_addrs().values() for a in addrs
                  if a.family in (socket.AF_INET, socket.AF_INET6)}
        expected = {a for a in ifaces if not a.startswith("127.") and a not in ("::1", "::", "0.0.0.0")}
        assert expected <= set(machine_facts().addresses)


class TestRunKeys:
    def test_with_config_a_row_under_another_key_is_stale_everywhere_and_not_counted(
            self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`publish --config` computes each model's key now, as `ledger --config` does: a row made under another
        configuration is marked stale in comment.md and rows.json and the ledger cannot close on it; a rerun
        under the current key is presented as current and closes the group."""
        config = tmp_path / "cfg" / "bench.toml"  # beside the inventory's own bench.toml
        config.parent.mkdir()
        config.write_text((ROOT / "bench.toml").read_text())
        now = current_keys(load_config(config))["reference-audioqa"]
        old = rekeyed(now, config_sha256="0" * 64)
        inv = inventory(tmp_path, configure_aqa=False)
        stale_run = qualify_journal(tmp_path / "runs" / "q-old", 100, [ref_row(keyed_by=msgspec.to_builtins(old))])
        note = (f"run key {old.digest} is not the current {now.digest}: "
                f"configuration {'0' * 12} -> {now.config_sha256[:12]}")
        out = tmp_path / "pub"
        assert main(["publish", str(stale_run), "--ledger", str(inv), "--config", str(config), "--out", str(out)]) == 0
        comment = (out / "comment.md").read_text()
        assert f"| stale, not counted (was aiperf-qualified): {note} |" in comment
        assert "Run keys: current under the run keys bench.toml gives now; 1 stale row(s) marked, not counted." \
            in comment
        assert "**Group ledger: cannot close**" in comment
        rows = json.loads((out / "rows.json").read_text())
        assert rows["runs"][0]["rows"][0]["stale"] == note
        assert rows["current_keys"] == "the run keys bench.toml gives now"
        assert f"aqbench: stale, not counted: q-old reference-audioqa: {note}" in capsys.readouterr().err
        fresh = qualify_journal(tmp_path / "runs" / "q-new", 200, [ref_row(keyed_by=msgspec.to_builtins(now))])
        out = tmp_path / "pub2"
        assert main(["publish", str(stale_run), str(fresh), "--ledger", str(inv), "--config", str(config),
                     "--out", str(out)]) == 0
        comment = (out / "comment.md").read_text()
        assert "| aiperf-qualified | - | - | - | q-new |" in comment and comment.count("stale, not counted") == 1
        assert "**Group ledger: can close**" in comment
        assert [("stale" in r) for run in json.loads((out / "rows.json").read_text())["runs"] for r in run["rows"]] \
            == [True, False]

    def test_without_config_the_newest_keyed_row_of_a_model_is_current(self, tmp_path: Path) -> None:
        """With no --config the current key is the newest keyed row's: an older row under another AIPerf is
        marked stale, saying what changed and how to check against a configuration."""
        older = qualify_journal(tmp_path / "runs" / "q1", 100, [ref_row(keyed_by=msgspec.to_builtins(key()))])
        newer = qualify_journal(tmp_path / "runs" / "q2", 200, [ref_row(
            "failed", failed_stage="correctness", reason="arm:audio 5/8 < 0.9",
            keyed_by=msgspec.to_builtins(key(aiperf_version="0.14.0")))])
        out = tmp_path / "pub"
        assert main(["publish", str(older), str(newer), "--out", str(out)]) == 0
        comment = (out / "comment.md").read_text()
        assert (f"| stale, not counted (was aiperf-qualified): run key {key().digest} is not the current "
                f"{key(aiperf_version='0.14.0').digest}: AIPerf version 0.13.0 -> 0.14.0 |") in comment
        assert "| failed at correctness: arm:audio 5/8 < 0.9 |" in comment
        assert ("Run keys: current under the newest keyed row of each model among these runs (pass --config to "
                "check against a configuration); 1 stale row(s) marked, not counted.") in comment


class TestCommand:
    def test_clean_runs_publish_and_exit_0(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Two small qualify journals with the ledger: every file written, and the comment carries the rows."""
        inv = inventory(tmp_path, configure_aqa=False)
        runs = [qualify_journal(tmp_path / "runs" / "q1", 100, [ref_row(reason="")])]
        assert main(["publish", *map(str, runs), "--ledger", str(inv), "--out", str(tmp_path / "pub")]) == 0
        comment = (tmp_path / "pub" / "comment.md").read_text()
        assert "| reference-audioqa | reference-cascade-cpu-int8 | aqbench/reference-cascade |" in comment
        assert "**Group ledger: can close** (11 of 11 checkpoints final; 4 variants apart)." in comment
        assert f"wrote {tmp_path / 'pub' / 'comment.md'}" in capsys.readouterr().out

    def test_private_path_left_in_the_inventory_refuses_with_exit_1(self, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
        """A folder outside every named root makes the scan refuse, naming the file and line, and nothing is
        written; naming the folder in [publish] roots makes it a placeholder."""
        inv = inventory(tmp_path, configure_aqa=False)
        data = json.loads(inv.read_text())
        data["rows"][0]["gap"] += "; notes in /srv/team-share/notes.txt"
        inv.write_text(json.dumps(data))
        run = qualify_journal(tmp_path / "runs" / "q1", 100, [ref_row()])
        assert main(["publish", str(run), "--ledger", str(inv), "--out", str(tmp_path / "pub")]) == 1
        err = capsys.readouterr().err
        assert re.search(r"pub/ledger\.md:\d+: absolute path \(/srv/team-share/notes\.txt\)", err), err
        assert "nothing was written. Add the folders to [publish] roots" in err
        assert not (tmp_path / "pub").exists()
        bench = tmp_path / "publish.toml"
        bench.write_text('[[models]]\nname = "m"\nfamily = "f"\ncheckpoint = "c"\n[models.correctness]\n'
                         'min_pass_rate = 1.0\n[publish]\nroots = {share = "/srv/team-share"}\n')
        assert main(["publish", str(run), "--ledger", str(inv), "--config", str(bench),
                     "--out", str(tmp_path / "pub2")]) == 0
        assert "notes in <share>/notes.txt" in (tmp_path / "pub2" / "ledger.md").read_text()

    def test_a_configured_clip_cache_becomes_a_placeholder(self, tmp_path: Path) -> None:
        """A run made with `[run] clip_cache` outside every other root publishes it as `<clip-cache>`, and the
        scan passes: what is posted never needs the cache."""
        run = qualify_journal(tmp_path / "runs" / "q1", 100, [ref_row()])
        journal = run / "events.jsonl"
        first, rest = journal.read_bytes().split(b"\n", 1)
        started = msgspec.json.decode(first)
        started["config"]["run"]["clip_cache"] = "/srv/clips-shared"
        journal.write_bytes(msgspec.json.encode(started) + b"\n" + rest)
        assert main(["publish", str(run), "--out", str(tmp_path / "pub")]) == 0
        posted = (tmp_path / "pub" / "runs" / "q1" / "events.jsonl").read_text()
        assert '"clip_cache":"<clip-cache>"' in posted and "/srv/clips-shared" not in posted

    def test_a_campaign_folder_stands_for_each_models_run(self, tmp_path: Path) -> None:
        """`publish` and `ledger` given a campaign folder read the run of each of its models (models/<name>/);
        one whose models have not started yet is a usage error saying so."""
        folder = tmp_path / "runs" / "campaign-1"
        folder.mkdir(parents=True)
        CampaignJournal(folder / "campaign.jsonl").write(CampaignStarted(campaign_id="campaign-1"))
        with pytest.raises(UsageError, match="a campaign folder with no model journal") as info:
            main(["publish", str(folder), "--out", str(tmp_path / "pub0")])
        assert info.value.exit_code == 2
        qualify_journal(folder / "models" / "reference-audioqa" / "q-ref", 100, [ref_row()])
        qualify_journal(folder / "models" / "aqa" / "q-aqa", 200, [{
            "model": "aqa", "checkpoint": "acme/aqaish-1b", "profile": "aqaish-1b", "status": "failed",
            "failed_stage": "correctness", "reason": "arm:audio 1/8 < 0.9"}])
        for model in ("reference-audioqa", "aqa"):  # as the driver streams it: models/<name>/events.jsonl
            run = next((folder / "models" / model).iterdir())
            (run / "events.jsonl").rename(folder / "models" / model / "events.jsonl")
            run.rmdir()
        inv = inventory(tmp_path, configure_aqa=True)
        assert main(["publish", str(folder), "--ledger", str(inv), "--out", str(tmp_path / "pub")]) == 0
        comment = (tmp_path / "pub" / "comment.md").read_text()
        assert "| q-ref |" in comment and "| failed at correctness: arm:audio 1/8 < 0.9 |" in comment
        assert sorted(p.name for p in (tmp_path / "pub" / "runs").iterdir()) == ["q-aqa", "q-ref"]
        assert "- acme/aqaish-1b: failed at correctness in run q-aqa" in comment
        code, led, _ = ledger(tmp_path, inv, folder)
        assert code == 1 and {r.run_id for r in led.runs} == {"q-ref", "q-aqa"}

    def test_a_folder_without_a_journal_is_a_usage_error(self, tmp_path: Path) -> None:
        """publish on a folder that is not a run exits 2 with what it expected."""
        with pytest.raises(UsageError, match="no run journal here; pass a run folder") as info:
            main(["publish", str(tmp_path), "--out", str(tmp_path / "pub")])
        assert info.value.exit_code == 2

    def test_help_states_the_exit_codes(self) -> None:
        """`aqbench publish --help` names what 0, 1 and 2 mean."""
        parser = argparse.ArgumentParser(prog="aqbench")
        sub = parser.add_subparsers(dest="command")
        publish_command.register(sub)
        text = " ".join(sub.choices["publish"].format_help().split())
        assert ("Exit codes: 0 written and clean, 1 the scan found private data (each file:line and kind listed, "
                "never the value; nothing written; do not post), 2 bad input") in text
