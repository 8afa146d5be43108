"""aqbench receiving SIGINT/SIGTERM: shielded cleanup stops the server, the journal is complete, 130/143."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from supervisor_support import SERVER

from orchestrator.spine.journal import read_journal

SCRIPT = Path(__file__).resolve().parents[2] / "data" / "servers" / "run_with_server.py"
REPO = Path(__file__).resolve().parents[3]

CONFIG = f"""
[run]
name = "sig"
[server]
argv = ["{{python}}", "{SERVER}", "--host", "{{host}}", "--port", "{{port}}", "--model-name", "{{model}}",
        "--grandchild"]
startup_timeout_s = 20.0
stop_grace_s = 5.0
[[models]]
name = "test-model"
family = "test"
checkpoint = "test/ckpt"
[models.correctness]
min_pass_rate = 1.0
"""


def _run_and_signal(tmp_path: Path, mode: str, signum: int) -> tuple[int, int, str, Path]:
    """Start the command, wait for READY, send `signum`; returns (rc, server pid, stderr, run dir)."""
    (tmp_path / "bench.toml").write_text(CONFIG)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(tmp_path / "bench.toml"), str(run_dir), mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY "), (line, proc.stderr.read() if proc.poll() is not None else "")
        server_pid = int(line.split()[1])
        proc.send_signal(signum)
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        stderr = proc.stderr.read()
        proc.stderr.close()
    return rc, server_pid, stderr, run_dir


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.parametrize("mode", ["tg", "cm"])
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_stops_server_and_orphans(tmp_path, mode, signum, code):
    """A real signal to the command: exit 128+n, and the server and its escaped grandchild are gone."""
    rc, server_pid, stderr, run_dir = _run_and_signal(tmp_path, mode, signum)
    assert rc == code, stderr[-2000:]
    assert _gone(server_pid)
    grandchild = re.search(r'"grandchild_pid": (\d+)', (run_dir / "server.log").read_text())
    assert grandchild and _gone(int(grandchild.group(1)))
    assert "orphan_killed" in stderr


@pytest.mark.parametrize("mode", ["tg", "cm"])
def test_signal_cleanup_is_journaled(tmp_path, mode):
    """After SIGINT the journal ends with RunFinished(interrupted) and holds the clean ServerExited."""
    rc, _, stderr, run_dir = _run_and_signal(tmp_path, mode, signal.SIGINT)
    assert rc == 130, stderr[-2000:]
    events, torn = read_journal(run_dir / "events.jsonl")
    assert torn is None
    names = [type(e).__name__ for e in events]
    assert names[0] == "RunStarted" and names[-1] == "RunFinished", names[-8:]
    assert events[-1].status == "interrupted" and events[-1].exit_code == 130
    exited = [e for e in events if type(e).__name__ == "ServerExited"]
    assert len(exited) == 1 and exited[0].expected and exited[0].during == "stop", exited
    assert len([e for e in events if type(e).__name__ == "OrphanKilled"]) == 1
    states = [e.state for e in events if type(e).__name__ == "ServerStateChanged"]
    assert states[-2:] == ["stopping", "stopped"]
    assert names.index("ServerExited") < names.index("RunFinished")


@pytest.mark.slow
@pytest.mark.servers
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_real_aqbench_command_stops_server_on_signal(tmp_path, signum, code):
    """`aqbench run-aiperf` signalled once its server is ready: exit 128+n, server and orphan gone."""
    (tmp_path / "bench.toml").write_text(CONFIG.replace("[run]\n", f'[run]\noutput_dir = "{tmp_path}/runs"\n'))
    aqbench = Path(sys.executable).with_name("aqbench")
    proc = subprocess.Popen([str(aqbench), "--log-format", "json", "run-aiperf", "--config",
                             str(tmp_path / "bench.toml")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path)
    seen: list[str] = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if '"event":"server_state"' in line and '"state":"ready"' in line:
                break
        else:
            pytest.fail(f"aqbench ended before its server was ready: {''.join(seen)[-2000:]}")
        proc.send_signal(signum)
        rest = proc.stderr.read()
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    stderr = "".join(seen) + rest
    assert rc == code, stderr[-2000:]
    run_dir = next((tmp_path / "runs").iterdir())
    log = (run_dir / "server.log").read_text()
    server_pid = int(re.search(r'"event": "starting".*"pid": (\d+)', log).group(1))
    grandchild = int(re.search(r'"grandchild_pid": (\d+)', log).group(1))
    assert _gone(server_pid) and _gone(grandchild)
    assert '"event":"orphan_killed"' in stderr
