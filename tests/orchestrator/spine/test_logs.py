"""structlog configuration: stderr shows the chosen level, the run log keeps info and above."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import structlog

from orchestrator.spine.logs import attach_run_log, configure_logging, detach_run_log, get_logger


@pytest.fixture
def restore_structlog():
    yield
    detach_run_log()
    structlog.reset_defaults()


def test_quiet_console_keeps_the_full_run_log(tmp_path: Path, capsys, restore_structlog) -> None:
    """--log-level warning: info entries leave stderr but still reach aqbench.log; debug reaches neither."""
    configure_logging(fmt="json", level="warning")
    attach_run_log(tmp_path / "aqbench.log")
    log = get_logger()
    log.debug("too_fine", n=0)
    log.info("server_state", state="ready")
    log.warning("server_stop_forced", after_s=0.5)
    detach_run_log()
    shown = [json.loads(line)["event"] for line in capsys.readouterr().err.splitlines()]
    kept = [json.loads(line)["event"] for line in (tmp_path / "aqbench.log").read_text().splitlines()]
    assert shown == ["server_stop_forced"]
    assert kept == ["server_state", "server_stop_forced"]


def test_debug_level_shows_and_keeps_debug(tmp_path: Path, capsys, restore_structlog) -> None:
    configure_logging(fmt="json", level="debug")
    attach_run_log(tmp_path / "aqbench.log")
    get_logger().debug("too_fine", n=0)
    detach_run_log()
    assert json.loads(capsys.readouterr().err)["event"] == "too_fine"
    assert json.loads((tmp_path / "aqbench.log").read_text())["level"] == "debug"


def test_json_stderr_carries_progress_lines_as_json_records(capsys, restore_structlog) -> None:
    """Off a terminal with --log-format json, a progress line is a JSON record beside the log records: the
    stream holds one format, in the order things were said."""
    from orchestrator.spine.logs import say

    configure_logging(fmt="json", level="info")
    get_logger().info("server_state", state="ready")
    say("  reports: a.md, b.html")
    records = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [r["event"] for r in records] == ["server_state", "say"]
    assert records[1]["text"] == "  reports: a.md, b.html" and records[1]["level"] == "info"


def test_console_stderr_carries_progress_lines_as_they_are(capsys, restore_structlog) -> None:
    """With console logs, a progress line is written as it is."""
    from orchestrator.spine.logs import say

    configure_logging(fmt="console", level="info")
    say("qualify: run-1")
    assert capsys.readouterr().err == "qualify: run-1\n"


def test_a_terminal_shows_only_warnings_unless_asked(tmp_path: Path, capsys, monkeypatch, restore_structlog) -> None:
    """On a terminal the live view owns the screen: info logs go to aqbench.log only, warnings show."""
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    configure_logging()
    attach_run_log(tmp_path / "aqbench.log")
    get_logger().info("server_state", state="stopping")
    get_logger().warning("orphan_killed", pid=7)
    detach_run_log()
    err = capsys.readouterr().err
    assert "orphan_killed" in err and "server_state" not in err
    kept = [json.loads(line)["event"] for line in (tmp_path / "aqbench.log").read_text().splitlines()]
    assert kept == ["server_state", "orphan_killed"]
