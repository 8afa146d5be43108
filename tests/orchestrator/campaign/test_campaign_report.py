"""The campaign's journal, report fold, progress view, configuration and missing-extra message, without Ray."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from campaign_support import ROOT, journal

from orchestrator.base.errors import ConfigError, JournalError
from orchestrator.campaign import fold_campaign, write_campaign_reports
from orchestrator.campaign.journal import read_campaign
from orchestrator.campaign.progress import Progress
from orchestrator.cli import main
from orchestrator.config import load_config


class TestCampaignFold:
    def test_rows_attempts_node_use_and_accounting(self, tmp_path: Path) -> None:
        """Each model has one row with every attempt and why it ended; node use sums each node's attempts."""
        r = fold_campaign(journal(tmp_path))
        assert [(row.model, row.status, [(a.attempt, a.node, a.ended) for a in row.attempts]) for row in r.rows] == [
            ("m1", "aiperf-qualified", [(1, "10.0.0.1", "node-lost"), (2, "10.0.0.2", "finished")]),
            ("m2", "failed", [(1, "10.0.0.2", "finished")])]
        assert [(n.node, n.attempts, n.busy_s, n.lost) for n in r.nodes] == [("10.0.0.1", 1, 2.0, True),
                                                                             ("10.0.0.2", 2, 8.0, False)]
        assert r.wall_s == 10.0 and r.status == "failed" and r.exit_code == 1
        assert r.accounting.balanced and r.accounting.by_status == {"aiperf-qualified": 1, "failed": 1}

    def test_a_model_without_a_final_row_is_unaccounted(self, tmp_path: Path) -> None:
        """A driver that died leaves m1 without a row: the report says so rather than dropping it."""
        r = fold_campaign(journal(tmp_path, finish_all=False))
        assert r.accounting.unaccounted == ["m1"] and not r.accounting.balanced
        assert r.status == "interrupted" and r.reason.startswith("campaign.jsonl has no campaign_finished line")

    def test_reports_show_rows_timeline_nodes_and_kept_files(self, tmp_path: Path) -> None:
        """report.md lists attempts and reproduce commands; report.html carries one timeline SVG."""
        journal(tmp_path)
        write_campaign_reports(tmp_path)
        md = (tmp_path / "report.md").read_text()
        assert ("| m1 | aiperf-qualified | - | #1 on 10.0.0.1: node-lost (NodeDiedError: gone); #2 on 10.0.0.2: "
                "finished | - | `aqbench qualify --model m1` |") in md
        assert "- m1: `/n/big.parquet` (9663676416 bytes)" in md
        assert "| 10.0.0.1 | 1 | 2.0 | 20% | yes |" in md
        assert "2 of 2 models ended with a status (aiperf-qualified: 1, failed: 1); none unaccounted." in md
        html = (tmp_path / "report.html").read_text()
        assert html.count("<svg") == 1 and html.count("<rect") == 3 and "10.0.0.1 (lost)" in html
        assert b'"report_version": 1' in (tmp_path / "report.json").read_bytes()

    def test_html_escapes_every_text(self, tmp_path: Path) -> None:
        """report.html (a Jinja2 template) escapes a reason and a command that carry markup."""
        import msgspec

        from orchestrator.campaign.report import render_campaign_html

        r = fold_campaign(journal(tmp_path))
        row = msgspec.structs.replace(r.rows[0], reason="<script>x</script>", reproduce="aqbench qualify --model 'a&b'")
        html = render_campaign_html(msgspec.structs.replace(r, rows=[row, *r.rows[1:]]))
        assert "<script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
        assert "aqbench qualify --model &#x27;a&amp;b&#x27;" in html

    def test_torn_last_line_is_skipped_and_corruption_is_named(self, tmp_path: Path) -> None:
        """A driver killed mid-write leaves a torn last line (skipped); a bad line before it is an error."""
        path = journal(tmp_path)
        good = path.read_bytes()
        path.write_bytes(good + b'{"kind":"model_fini')
        assert len(read_campaign(path)) == good.count(b"\n")
        lines = good.split(b"\n")
        path.write_bytes(b"\n".join([lines[0], b"{oops", *lines[1:]]))
        with pytest.raises(JournalError, match=r"campaign\.jsonl:2: corrupt campaign journal line"):
            read_campaign(path)


class TestProgress:
    def test_plain_lines_when_not_a_terminal(self) -> None:
        """Off a terminal, each change is one line: model, status, node, stage."""
        out = io.StringIO()
        p = Progress(["m1"], out=out, live=False)
        p.update("m1", node="10.0.0.1", status="running")
        p.update("m1", stage="capability")
        p.show()
        p.show()
        assert out.getvalue() == "campaign: m1: running on 10.0.0.1 at capability (0:00)\n"

    def test_table_is_redrawn_in_place_on_a_terminal(self) -> None:
        """On a terminal the table is redrawn over itself (cursor up by its own height)."""
        out = io.StringIO()
        p = Progress(["m1", "m2"], out=out, live=True)
        p.show(force=True)
        p.update("m2", status="failed")
        p.show(force=True)
        text = out.getvalue()
        assert text.startswith("model  node  stage  elapsed  status\nm1     -     -      -        queued\n")
        assert "\x1b[3F\x1b[J" in text and text.rstrip().endswith("failed")


class TestCampaignConfig:
    def test_resources_and_campaign_section(self, tmp_path: Path) -> None:
        """[models.resources] and [campaign] parse with their defaults; an unknown resource key is refused."""
        text = (ROOT / "bench.toml").read_text()
        path = tmp_path / "bench.toml"
        path.write_text(text.replace("gpus = 0", "gpus = 1\ncustom = { H100 = 1 }").replace("max_retries = 2",
                                                                                            "max_retries = 1"))
        cfg = load_config(path)
        assert cfg.models[0].resources.gpus == 1 and cfg.models[0].resources.custom == {"H100": 1}
        assert cfg.models[0].resources.cpus == 1 and cfg.campaign.max_retries == 1 and cfg.campaign.max_parallel == 0
        path.write_text(text.replace("gpus = 0", "gpu = 1"))
        with pytest.raises(ConfigError, match=r"models\[0\]\.resources: unknown key gpu"):
            load_config(path)


class TestMissingExtra:
    def test_without_ray_the_error_names_the_extra(self, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
        """`aqbench campaign` without Ray installed exits 2 and says which extra to install."""
        monkeypatch.setitem(sys.modules, "ray", None)
        monkeypatch.delitem(sys.modules, "adapters.ray.cluster", raising=False)
        rc = main(["campaign", "--config", str(ROOT / "bench.toml"), "--address", "127.0.0.1:1"])
        assert rc == 2
        assert ("aqbench: error: aqbench campaign needs Ray, which is not installed; install the extra: "
                "pip install 'aqbench[campaign]' (or pip install ray)") in capsys.readouterr().err
