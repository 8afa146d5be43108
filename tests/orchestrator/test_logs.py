"""structlog configuration: stderr shows the chosen level, the run log keeps info and above."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import structlog

from orchestrator.logs import attach_run_log, configure_logging, detach_run_log, get_logger


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
