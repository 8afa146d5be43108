"""[slo] and [sweep] in bench.toml: defaults, and bad points refused naming the key and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.base.errors import ConfigError
from orchestrator.config import load_config

ROOT = Path(__file__).resolve().parents[3]
DEFAULT = (ROOT / "bench.toml").read_text()


def _write(tmp_path: Path, extra: str) -> Path:
    p = tmp_path / "bench.toml"
    p.write_text(DEFAULT + "\n" + extra)
    return p


class TestSweepConfig:
    def test_defaults_judge_errors_answers_and_completeness(self, tmp_path: Path) -> None:
        """Without [slo] or [sweep]: open loop over 1..8 req/s, 60 requests each, latency unjudged, 5% errors allowed."""
        cfg = load_config(_write(tmp_path, ""))
        assert (cfg.sweep.mode, cfg.sweep.points, cfg.sweep.requests_per_point) == ("rate", [1.0, 2.0, 4.0, 8.0], 60)
        assert cfg.slo.p99_latency_ms is None and cfg.slo.max_error_rate == 0.05
        assert cfg.slo.answers and cfg.slo.complete_outputs

    def test_descending_points_are_refused(self, tmp_path: Path) -> None:
        """Points must ascend: the error names the key and says so."""
        with pytest.raises(ConfigError, match=r"sweep\.points: \[4\.0, 2\.0\]: list the offered loads in ascending order"):
            load_config(_write(tmp_path, "[sweep]\npoints = [4, 2]\n"))

    def test_fractional_concurrency_is_refused(self, tmp_path: Path) -> None:
        """Concurrency points are whole numbers."""
        with pytest.raises(ConfigError, match=r"sweep\.points: \[1\.0, 2\.5\]: concurrency points are whole numbers"):
            load_config(_write(tmp_path, "[sweep]\nmode = \"concurrency\"\npoints = [1, 2.5]\n"))

    def test_an_unknown_slo_key_is_refused(self, tmp_path: Path) -> None:
        """A misspelt [slo] key is an error, not silently ignored."""
        with pytest.raises(ConfigError, match=r"slo: .*p99_latency"):
            load_config(_write(tmp_path, "[slo]\np99_latency = 5\n"))


class TestSweepFlags:
    def test_flags_are_checked_as_bench_toml_is(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`--rates 4,2` is refused before anything starts: exit 2, naming the key and where it came from."""
        from orchestrator.cli import main

        config = _write(tmp_path, "")
        assert main(["--log-level", "error", "sweep", "--config", str(config), "--rates", "4,2"]) == 2
        err = capsys.readouterr().err
        assert f"the command line and {config}: sweep.points: [4.0, 2.0]: list the offered loads in ascending order" in err
        assert not (tmp_path / "runs").exists()

    @pytest.mark.parametrize(("argv", "said"), [
        (["sweep", "--requests-per-point", "0"], "--requests-per-point 0: must be a positive number of requests"),
        (["soak", "--rate", "-1"], "--rate -1: must be a positive number of requests per second"),
        (["soak", "--concurrency", "0"], "--concurrency 0: must be a positive number of concurrent requests")])
    def test_sweep_and_soak_refuse_a_load_that_is_not_positive(self, tmp_path: Path, argv: list[str], said: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
        """The shared load options: zero or negative is refused before anything starts, exit 2."""
        from orchestrator.cli import main

        config = _write(tmp_path, "")
        assert main(["--log-level", "error", *argv, "--config", str(config)]) == 2
        assert said in capsys.readouterr().err
        assert not (tmp_path / "runs").exists()
