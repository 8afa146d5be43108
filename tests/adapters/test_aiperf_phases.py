"""Several windows in one AIPerf process: the phased command as AIPerf 0.13.0's own config resolver reads it,
records routed to their phase's window, and each phase's sent count from AIPerf's log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiperf.config.flags import CLIConfig
from aiperf.config.flags.resolver import resolve_config
from cyclopts import App

from adapters.aiperf.command import build_command
from adapters.aiperf.phases import LOAD_FLAGS, phased_command
from adapters.aiperf.records import parse_export_line, parse_tap_line
from adapters.aiperf.sent import parse_phase_sent, parse_phase_started
from orchestrator.config import WorkloadConfig
from orchestrator.spine.ports import PhaseLoad

DATA = Path(__file__).parent.parent / "data" / "aiperf"
LOADS = [PhaseLoad(name="baseline", requests=5, warmup=2, concurrency=1),
         PhaseLoad(name="rate2-1", requests=12, warmup=3, rate=2.0),
         PhaseLoad(name="rate1_5-1", requests=12, rate=1.5)]


def _resolved(argv: list[str]) -> Any:
    """AIPerf's own resolution of an `aiperf profile` argv (its CLI parser, then resolve_config), no run."""
    got: dict[str, CLIConfig] = {}
    app = App()

    @app.default
    def profile(*, cli_config: CLIConfig) -> None:
        got["cli"] = cli_config

    app(argv[2:], exit_on_error=False, result_action="return_value")
    return resolve_config(got["cli"], got["cli"].config_file)


def _command(tmp_path: Path, **load: Any) -> Any:
    wl = WorkloadConfig(warmup_requests=3, requests=12, streaming=True, max_tokens=64, arrival_pattern="poisson")
    (tmp_path / "in.jsonl").write_text('{"session_id": "a.audio", "text": "hi"}\n')
    return build_command(wl, base_url="http://127.0.0.1:9", model="m", input_file=tmp_path / "in.jsonl",
                         artifact_dir=tmp_path / "art", tokenizer=tmp_path / "tok", executable="aiperf", **load)


class TestPhasedCommand:
    def test_aiperf_reads_the_phases_and_everything_else_as_one_run(self, tmp_path: Path) -> None:
        """AIPerf 0.13.0 resolves the phased command to the loads in order (warmup before each load that has
        one, the arrival pattern kept), and to the same endpoint, dataset and exports as a one-load command."""
        one = _command(tmp_path, request_rate=2.0)
        phased = phased_command(one, LOADS, tmp_path / "batch")
        assert not set(LOAD_FLAGS) & set(phased.argv) and phased.env == one.env
        assert phased.argv[-2:] == ["--config", str((tmp_path / "batch" / "phases.yaml").resolve())]
        cfg = _resolved(phased.argv)
        got = [(p.name, p.kind, str(p.type), getattr(p, "rate", None), p.concurrency, p.requests, p.seamless)
               for p in cfg.benchmark.phases]
        assert got == [("warmup_baseline", "warmup", "concurrency", None, 1, 2, False),
                       ("baseline", "profiling", "concurrency", None, 1, 5, False),
                       ("warmup_rate2-1", "warmup", "poisson", 2.0, None, 3, False),
                       ("rate2-1", "profiling", "poisson", 2.0, None, 12, False),
                       ("rate1_5-1", "profiling", "poisson", 1.5, None, 12, False)]
        single = _resolved(one.argv).model_dump(mode="json")
        both = cfg.model_dump(mode="json")
        for doc in (single, both):  # beside the phases, the dataset's label and entry count (neither is sent)
            doc["benchmark"].pop("phases")
            for key in ("name", "entries"):
                doc["benchmark"]["datasets"][0].pop(key)
        assert both == single

    def test_bad_loads_are_refused(self, tmp_path: Path) -> None:
        one = _command(tmp_path, concurrency=1)
        with pytest.raises(ValueError, match="repeat"):
            phased_command(one, [LOADS[0], LOADS[0]], tmp_path)
        with pytest.raises(ValueError, match="not both"):
            phased_command(one, [PhaseLoad(name="x", requests=1, rate=1.0, concurrency=1)], tmp_path)


class TestPhasedRecords:
    def test_real_records_go_to_their_phase_window(self) -> None:
        """A real phased run's export (AIPerf 0.13.0): each record counts in its phase's window, its warmup
        kept apart by its phase; a phase not named stays in the run's window."""
        windows = {"warmup_baseline": "m/baseline", "baseline": "m/baseline", "warmup_r2": "m/rate2-1",
                   "r2": "m/rate2-1"}
        lines = (DATA / "phased_profile_export.jsonl").read_bytes().splitlines()
        got = [(json.loads(line)["metadata"]["phase_name"], parse_export_line(line, window="w", windows=windows))
               for line in lines]
        assert [(name, r.aiperf_run, r.phase) for name, r in got] == [
            ("warmup_baseline", "m/baseline", "warmup"), ("baseline", "m/baseline", "profiling"),
            ("warmup_r2", "m/rate2-1", "warmup"), ("r2", "m/rate2-1", "profiling"),
            ("r2", "m/rate2-1", "profiling"), ("warmup_r4", "w", "warmup"), ("r4", "w", "profiling")]
        assert got[4][1].status_code == 429  # an error record is routed like any other
        assert parse_export_line(lines[0], window="w").aiperf_run == "w"  # no mapping: the run's window

    def test_tap_line_names_its_phase(self) -> None:
        line = b'{"request_id":"r1","phase":"profiling","phase_name":"rate2-1"}'
        assert parse_tap_line(line, window="w", windows={"rate2-1": "m/rate2-1"}).aiperf_run == "m/rate2-1"
        assert parse_tap_line(b'{"request_id":"r1","phase":"profiling"}', window="w",
                              windows={"rate2-1": "m/rate2-1"}).aiperf_run == "w"

    def test_phase_lines(self) -> None:
        """AIPerf 0.13.0's own lines (timing/phase/runner.py), as a real phased run printed them."""
        sent = "19:31:04.907 NOTICE   Phase r2 (profiling) sending complete | sent=1,204, completed=11, in_flight=1"
        assert parse_phase_sent(sent) == ("r2", "profiling", 1204)
        assert parse_phase_started("19:30:56.225 NOTICE   Phase warmup_r2 (warmup) started | phase_index=2 | "
                                   "target: 3 requests (runner.py:660)") == "warmup_r2"
        assert parse_phase_started("Phase r2 (profiling) complete | completed=12") is None
        assert parse_phase_sent("Phase r2 (profiling) started") is None
