"""Start-up: building the command line loads no server engine; `serve-reference` still gets its flags."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def test_parsing_another_command_loads_no_reference_engine() -> None:
    """`run-aiperf` parses without importing adapters.reference (faster-whisper, aiohttp: ~1.5 s)."""
    code = ("import sys\nfrom orchestrator.cli import build_parser\n"
            "build_parser().parse_args(['run-aiperf', '--config', 'x.toml'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('adapters.reference') or m == 'faster_whisper'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True)
    assert out.stdout.strip() == "[]"


def test_serve_reference_parses_its_server_flags() -> None:
    args = build_parser().parse_args(["serve-reference", "--model-name", "m", "--port", "9001", "--replicas", "2"])
    assert (args.model_name, args.port, args.replicas) == ("m", 9001, 2)
    assert args.func.__module__ == "orchestrator.commands.serve_reference"


def test_serve_reference_help_lists_its_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["serve-reference", "--help"])
    assert exc.value.code == 0
    assert "--model-name" in capsys.readouterr().out


def test_serve_reference_requires_model_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["serve-reference", "--port", "9001"])
    assert exc.value.code == 2
    assert "--model-name" in capsys.readouterr().err
