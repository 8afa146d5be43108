"""The handover file protocol, aqbench's side: the files it writes (whole, never torn) and reads, and the
variables a command gets. AIPerf's side (the timing plugin) is tested in test_aiperf_timing.py."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from adapters.aiperf.command import build_command
from adapters.aiperf.handover import FileHandover
from adapters.aiperf.handover_files import write_atomic
from orchestrator.commands.wiring import real_toolkit
from orchestrator.config import WorkloadConfig
from orchestrator.ports import HaltFact, HandoverControl

pytestmark = pytest.mark.inprocess


def test_the_toolkit_hands_a_control_whose_gate_and_env_a_command_carries(tmp_path: Path) -> None:
    folder = tmp_path / "h"
    control: HandoverControl = real_toolkit().aiperf.handover_control(folder, gated=True)
    assert control.folder == folder.resolve() and (folder / "gate").exists()
    assert control.env() == {"AQBENCH_HANDOVER_DIR": str(folder.resolve())}
    cmd = build_command(WorkloadConfig(), base_url="http://127.0.0.1:9", model="m", input_file=tmp_path / "in",
                        artifact_dir=tmp_path / "art", tokenizer=tmp_path / "tok", executable="aiperf",
                        control=control, timing_wait=True)
    assert cmd.env["AQBENCH_HANDOVER_DIR"] == str(folder.resolve()) and cmd.env["AQBENCH_TIMING_WAIT"] == "1"
    assert "AQBENCH_HANDOVER_DIR=" in cmd.shell and "AQBENCH_TIMING_WAIT=1" in cmd.shell
    plain = build_command(WorkloadConfig(), base_url="http://127.0.0.1:9", model="m", input_file=tmp_path / "in",
                          artifact_dir=tmp_path / "art", tokenizer=tmp_path / "tok", executable="aiperf")
    assert not any(k.startswith(("AQBENCH_HANDOVER", "AQBENCH_TIMING")) for k in plain.env)


def test_an_ungated_control_writes_no_gate_and_clears_files_of_an_earlier_use(tmp_path: Path) -> None:
    for name in ("gate", "ready", "go", "halt", "halted", "limit"):
        (tmp_path / name).write_text("1")
    control = FileHandover(tmp_path, gated=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert control.halted() is None


def test_go_halt_and_limit_are_whole_files_and_halted_reads_back(tmp_path: Path) -> None:
    control = FileHandover(tmp_path, gated=True)
    control.set_limit(0)
    control.set_limit(3)
    control.go()
    control.halt()
    assert (tmp_path / "limit").read_text() == "3" and (tmp_path / "go").exists() and (tmp_path / "halt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(ValueError, match="in_flight"):
        control.set_limit(-1)
    write_atomic(tmp_path / "halted", '{"unix_ns": 1700000000000000000, "sent": 41}')
    assert control.halted() == HaltFact(unix_ns=1_700_000_000_000_000_000, sent=41)


@pytest.mark.anyio
async def test_wait_ready_returns_the_unix_ns_the_process_wrote(tmp_path: Path) -> None:
    control = FileHandover(tmp_path, gated=True)
    written = time.time_ns()

    async def process_side() -> None:
        await anyio.sleep(0.05)
        write_atomic(tmp_path / "ready", str(written))

    async with anyio.create_task_group() as tg:
        tg.start_soon(process_side)
        with anyio.fail_after(5):
            assert await control.wait_ready() == written
