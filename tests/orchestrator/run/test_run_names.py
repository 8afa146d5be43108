"""Run folders are named by the command that made them unless `[run] name` is set."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config import load_config
from orchestrator.run import open_run

ROOT = Path(__file__).resolve().parents[3]


def _config(tmp_path: Path, name: str | None) -> Path:
    text = (ROOT / "bench.toml").read_text()
    if name is not None:
        text = text.replace("[run]\n", f'[run]\nname = "{name}"\n', 1)
    path = tmp_path / "bench.toml"
    path.write_text(text)
    return path


@pytest.mark.anyio
@pytest.mark.parametrize("command", ["qualify", "run-aiperf"])
async def test_unnamed_runs_are_named_by_command(tmp_path: Path, command: str) -> None:
    cfg = load_config(_config(tmp_path, None))
    async with open_run(cfg, command=command, argv=[]) as run:
        pass
    assert run.run_dir.parent == tmp_path / "runs" and run.run_dir.name.startswith(f"{command}-2")


@pytest.mark.anyio
async def test_a_set_name_wins(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path, "nightly"))
    async with open_run(cfg, command="run-aiperf", argv=[]) as run:
        pass
    assert run.run_dir.name.startswith("nightly-2")
