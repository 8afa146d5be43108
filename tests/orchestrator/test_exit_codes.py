"""Exit codes through the command line: an unexpected exception ends a run with exit 3 and a journaled
failure (never Python's exit 1, which means "a verdict failed"); every run command's --help states them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.cli import build_parser, main
from orchestrator.events import Failed, RunFinished
from orchestrator.journal import read_journal

ROOT = Path(__file__).resolve().parents[2]


def test_unexpected_exception_exits_3_with_a_journaled_failure(tmp_path: Path, monkeypatch, capsys) -> None:
    import orchestrator.qualify.stages as stages

    def broken(*_a, **_k):
        raise RuntimeError("boom in prepare_arms")

    monkeypatch.setattr(stages, "prepare_arms", broken)
    config = tmp_path / "bench.toml"
    config.write_text((ROOT / "bench.toml").read_text())
    rc = main(["--log-level", "error", "qualify", "--config", str(config)])
    assert rc == 3
    assert "internal error: RuntimeError: boom in prepare_arms" in capsys.readouterr().err
    [run_dir] = list((tmp_path / "runs").iterdir())
    events, torn = read_journal(run_dir / "events.jsonl")
    assert torn is None
    [failed] = [e for e in events if isinstance(e, Failed)]
    assert failed.code == "RuntimeError" and "boom in prepare_arms" in failed.message
    finished = events[-1]
    assert isinstance(finished, RunFinished) and (finished.status, finished.exit_code) == ("error", 3)


@pytest.mark.parametrize("command", ["run-aiperf", "doctor", "qualify", "report", "config", "reference", "dataset",
                                     "ingest", "soak"])
def test_help_states_exit_codes(command: str) -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    text = " ".join(sub.choices[command].format_help().split())  # type: ignore[index]
    assert "Exit 0 when" in text and re.search(r"\b2 (when|on)\b", text) and re.search(r"\b3 when\b", text), text


@pytest.mark.parametrize("command", ["run-aiperf", "qualify", "soak", "campaign"])
def test_interruptible_commands_list_their_signal_codes(command: str) -> None:
    """A command that a signal can stop (run_main: 128+n) says so in its help, as every other one does."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert "130/143" in " ".join(sub.choices[command].format_help().split())  # type: ignore[index]
