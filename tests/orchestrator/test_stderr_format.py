"""One format per stream, as --log-format promises: every line aqbench writes on stderr for a person goes
through say() (orchestrator.spine.stderr), so beside JSON logs it is a JSON record and beside console logs plain text."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
import structlog
from compare_support import RunSpec, write_run

from orchestrator.cli import main
from orchestrator.spine.logs import detach_run_log

ROOT = Path(__file__).resolve().parents[2]
# Modules that own stderr themselves: the logging setup and say(), and the live terminal views (on a terminal only).
OWNERS = {"orchestrator/spine/logs.py", "orchestrator/spine/stderr.py"}


@pytest.fixture(autouse=True)
def _reset_logging():
    yield
    detach_run_log()
    structlog.reset_defaults()


def _writes_stderr(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    text = ast.unparse(node.func)
    if text == "sys.stderr.write":
        return True
    return text == "print" and any(k.arg == "file" and ast.unparse(k.value) == "sys.stderr" for k in node.keywords)


def test_no_line_for_a_person_bypasses_say() -> None:
    """No module of orchestrator/ prints to stderr itself (ab's 'ab: 6 pairs in order BAAB...', the soak's and
    sweep's summaries, compare's refusals): each goes through say(), in the stream's one format."""
    found = []
    for path in sorted((ROOT / "orchestrator").rglob("*.py")):
        name, text = path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")
        if "stderr" in text and name not in OWNERS and not name.startswith("orchestrator/view/"):
            found += [f"{name}:{node.lineno}" for node in ast.walk(ast.parse(text)) if _writes_stderr(node)]
    assert found == []


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    """Cheap commands, run for real, each with something to say on stderr (an error, a warning, a refusal)."""
    base = write_run(tmp_path / "base", RunSpec(seed=1))
    cand = write_run(tmp_path / "cand", RunSpec(seed=2, concurrency=4))
    torn = tmp_path / "torn"
    shutil.copytree(base, torn)
    with (torn / "events.jsonl").open("a") as f:
        f.write('{"kind": "run_fin')
    log = tmp_path / "x.log"
    log.write_text("")
    (tmp_path / "bad.toml").write_text("[sevrer]\n")
    return {
        "config check": ["config", "check", str(tmp_path / "bad.toml")],
        "doctor": ["doctor", "--config", str(tmp_path / "missing.toml")],
        "compare": ["compare", str(base), str(cand), "--out", str(tmp_path / "cmp")],
        "report": ["report", str(torn), "--out", str(tmp_path / "rep")],
        "ingest": ["ingest", str(log), "--summary-json"],
        "dataset check": ["dataset", "check", str(tmp_path / "nowhere")],
        "ledger": ["ledger", "--inventory", str(tmp_path / "missing.json")],
        "run-aiperf": ["run-aiperf", "--config", str(tmp_path / "bad.toml"), "--request-rate", "2"],
        "ab": ["ab", "--baseline", str(tmp_path / "bad.toml"), "--candidate", str(tmp_path / "bad.toml")],
        "soak": ["soak", "--config", str(tmp_path / "bad.toml")],
        "sweep": ["sweep", "--config", str(tmp_path / "bad.toml"), "--match-timeout-s", "5"],
        "qualify": ["qualify", "--config", str(tmp_path / "bad.toml")],
    }


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_each_command_writes_one_format(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each command's stderr is all JSON records under --log-format json, and holds none under console."""
    for name, argv in _commands(tmp_path).items():
        main(["--log-format", fmt, *argv])
        err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert err, f"{name}: said nothing, so the test proves nothing"
        if fmt == "json":
            for line in err:
                assert isinstance(json.loads(line), dict), f"{name}: {line!r}"
        else:
            assert not [line for line in err if line.startswith("{")], name
