"""Exit codes through the command line: an unexpected exception ends a run with exit 3 and a journaled
failure (never Python's exit 1, which means "a verdict failed"); every run command's --help states them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.cli import build_parser, main
from orchestrator.events import Failed, RunFinished
from orchestrator.spine.journal import read_journal

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


def _helps() -> dict[str, str]:
    """Every command's --help, whitespace collapsed."""
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return {name: " ".join(p.format_help().split()) for name, p in sub.choices.items()}  # type: ignore[union-attr]


def _stated(text: str) -> set[str]:
    """The exit codes a help text states, read from its sentence (or epilog) that starts with "Exit"/"exit codes"."""
    at = re.search(r"\b[Ee]xit( codes:?)? \d", text)
    assert at, f"no exit codes stated: {text[:300]}"
    return set(re.findall(r"(?<![\w./-])(\d{1,3})(?=[ :,/])", text[at.start():]))


@pytest.mark.parametrize("command", sorted(_helps()))
def test_help_states_exit_codes(command: str) -> None:
    """Every command says what 0, 2 (usage) and 3 (aqbench itself failed: main's catch-all, any command) mean."""
    assert {"0", "2", "3"} <= _stated(_helps()[command]), _helps()[command]


@pytest.mark.parametrize("command", ["run-aiperf", "qualify", "soak", "campaign", "sweep", "ab"])
def test_interruptible_commands_list_their_signal_codes(command: str) -> None:
    """A command that a signal can stop (run_main: 128+n) says so in its help, as every other one does."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert "130/143" in " ".join(sub.choices[command].format_help().split())  # type: ignore[index]
