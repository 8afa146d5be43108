"""Start-up: building the command line loads no server engine; `serve-reference` still gets its flags."""

from __future__ import annotations

import ast
import io
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.cli import build_parser
from orchestrator.commands.run_aiperf import choose_live_output

ROOT = Path(__file__).resolve().parents[2]


def _printed(code: str) -> object:
    """What `code`, run in a fresh interpreter with only this checkout on its path, printed: one Python literal."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True)
    return ast.literal_eval(out.stdout)


def _loaded_after_parsing(prefixes: tuple[str, ...]) -> list[str]:
    code = ("import sys\nfrom orchestrator.cli import build_parser\n"
            "build_parser().parse_args(['run-aiperf', '--config', 'x.toml'])\n"
            f"print(sorted(m for m in sys.modules if m.startswith({prefixes!r})))")
    printed = _printed(code)
    assert isinstance(printed, list)
    return printed


def test_parsing_another_command_loads_no_reference_engine() -> None:
    """`run-aiperf` parses without importing adapters.reference (faster-whisper, aiohttp: ~1.5 s)."""
    assert _loaded_after_parsing(("adapters.reference", "faster_whisper")) == []


def test_parsing_loads_no_other_command_package() -> None:
    """The campaign and inventory packages (Ray glue, HTML, TRTMC tree readers) load only for their own
    command: they cost every other command ~0.15 CPU-s of start-up (issue 16)."""
    assert _loaded_after_parsing(("orchestrator.campaign", "orchestrator.inventory", "ray", "jinja2")) == []


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


def test_a_sweep_loads_neither_scipy_stats_nor_optimize() -> None:
    """What `aqbench sweep` imports to run (its toolkit, the sweep and qualify's probes) leaves out the
    non-inferiority judges' scipy.stats and scipy.optimize (~1 s of a sweep's start-up, issue 33); they load
    where a judge is called."""
    code = ("import sys\nfrom orchestrator.commands.wiring import real_toolkit\nfrom orchestrator.run import run_main\n"
            "from orchestrator.sweep import SweepOptions, sweep\n"
            "print(sorted(m for m in sys.modules if m in ('scipy.stats', 'scipy.optimize')))")
    assert _printed(code) == []


def test_run_aiperf_loads_no_http_client_library_nor_the_owner_files_readers() -> None:
    """What `aqbench run-aiperf` imports to run (its toolkit, the phase, the run's scope and reports) leaves out
    aiohttp (~0.2 CPU-s of its own process a run, bench/overhead.py): the server's probes use http.client, and
    the chat adapters load where a chat starts; and the owners' files readers (the inventory's tree, YAML),
    which only qualify and campaign use."""
    code = ("import sys\nfrom orchestrator.commands.wiring import real_toolkit\nfrom orchestrator.run import run_main\n"
            "from orchestrator.aiperf_phase import run_aiperf_phase\nfrom orchestrator.reports import write_reports\n"
            "real_toolkit().server_parts('reference').new_probe()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aiohttp', 'yaml')"
            " or m.startswith(('adapters.chat', 'orchestrator.inventory', 'adapters.trtmc.qual_files'))))")
    assert _printed(code) == []


def test_ingest_of_whole_files_loads_no_logging_stack_nor_process_owners() -> None:
    """`aqbench ingest` of a records file and an AIPerf export, run to its summary, loads neither structlog (with
    rich and pygments) nor AIPerf's process owner (psutil, anyio's backends): 0.2 CPU-s of its start
    (bench/ingest.py); nor, where the column join answers, the Joiner's package (the live correlator's bus and
    anyio streams), the follower or the journal's redaction patterns."""
    code = ("import sys, io, contextlib\nfrom orchestrator.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    code = main(['ingest', 'tests/data/ingest/reference-records-1.jsonl',"
            " 'tests/data/aiperf/profile_export.jsonl'])\n"
            "heavy = ('structlog', 'rich', 'pygments', 'psutil', 'asyncio', 'adapters.aiperf.run',"
            " 'orchestrator.correlate', 'orchestrator.ingest.follow', 'orchestrator.spine.redaction', 'anyio.streams')\n"
            "print([code, sorted(m for m in sys.modules if m.startswith(heavy))])")
    assert _printed(code) == [0, []]


def test_run_aiperf_off_a_terminal_loads_neither_rich_nor_importlib_metadata() -> None:
    """With stderr not a terminal, what `aqbench run-aiperf` imports and calls to start (its toolkit, AIPerf's
    install check, the run's tool versions, the logs, the live line's output) leaves out rich, pygments, attrs
    and greenlet (structlog's optional tracebacks: 0.06 CPU-s) and importlib.metadata (0.05 CPU-s); rich
    still imports afterwards."""
    code = ("import sys\nfrom orchestrator.commands.run_aiperf import choose_live_output\n"
            "from orchestrator.commands.wiring import real_toolkit\nfrom orchestrator.run import run_main\n"
            "from orchestrator.aiperf_phase import run_aiperf_phase\nfrom orchestrator.reports import write_reports\n"
            "from orchestrator.run.provenance import tool_versions\nfrom orchestrator.spine.logs import get_logger\n"
            "real_toolkit().aiperf.check_install()\nversions = tool_versions()\nout = choose_live_output()\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'pygments', 'attr', 'greenlet')"
            " or m == 'importlib.metadata')\nimport rich.console\n"
            "print([type(out).__name__, 'structlog' in sys.modules, versions['aiperf'], loaded])")
    assert _printed(code) == ["PlainOutput", True, "0.13.0", []]


def test_run_aiperf_draws_its_live_line_with_rich_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    out = choose_live_output()
    assert type(out).__name__ == "LiveOutput" and out.tty
