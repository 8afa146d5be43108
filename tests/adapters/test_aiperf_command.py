"""Building the AIPerf command from [workload], judging artifacts, and the install check."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from adapters.aiperf.artifacts import judge_artifacts
from adapters.aiperf.command import build_command
from adapters.aiperf.install import check_install
from orchestrator.config import WorkloadConfig

DATA = Path(__file__).parent.parent / "data" / "aiperf"


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


class TestBuildCommand:
    def test_workload_to_argv(self, tmp_path: Path) -> None:
        """Every workload key lands in its flag, with the fixed offline and export flags."""
        wl = WorkloadConfig(warmup_requests=3, requests=17, concurrency=4, streaming=True,
                            request_timeout_s=12.5, max_tokens=32)
        cmd = build_command(wl, base_url="http://127.0.0.1:9", model="m", input_file=tmp_path / "in.jsonl",
                            artifact_dir=tmp_path / "art", tokenizer=tmp_path / "tok", executable="aiperf")
        a = cmd.argv
        assert a[:2] == ["aiperf", "profile"]
        assert (_flag(a, "--request-count"), _flag(a, "--warmup-request-count"), _flag(a, "--concurrency")) == ("17", "3", "4")
        assert _flag(a, "--request-timeout-seconds") == "12.5" and "--streaming" in a
        assert _flag(a, "--tokenizer") == str(tmp_path / "tok") and _flag(a, "--random-seed") == "0"
        for flag in ("--export-http-trace", "--export-outputs-json", "--no-server-metrics", "--no-gpu-telemetry"):
            assert flag in a
        assert _flag(a, "--export-level") == "raw" and _flag(a, "--ui-type") == "none"
        assert "temperature:0" in a and "max_tokens:32" in a and "--request-rate" not in a
        assert cmd.env["AQBENCH_TAP_DIR"] == str(tmp_path / "tap")
        # AIPerf's IPC sockets live under TMPDIR: a deep run folder is swapped for a short /tmp path.
        tmp = cmd.env["TMPDIR"]
        assert tmp == str(tmp_path / "tmp") if len(str(tmp_path / "tmp")) <= 48 else tmp.startswith("/tmp/aqbench-tmp-")
        assert len(tmp) <= 48
        assert cmd.env["AIPERF_RECORD_EXPORT_BATCH_SIZE"] == "1"
        # Fast start (bench/aiperf_startup.py): no prompt corpus to tokenize. Never offline mode: AIPerf 0.13.0
        # then fails to load a local tokenizer folder.
        assert _flag(a, "--prompt-corpus") == "random" and "HF_HUB_OFFLINE" not in cmd.env

    def test_rate_override_and_shell_round_trip(self, tmp_path: Path) -> None:
        """A request-rate override replaces concurrency; the shell line splits back into env + argv."""
        cmd = build_command(WorkloadConfig(), base_url="http://h", model="m b", input_file=tmp_path / "i",
                            artifact_dir=tmp_path / "a", tokenizer=tmp_path / "t", request_rate=2.5,
                            requests=5, warmup=0, live_tap=False)
        assert _flag(cmd.argv, "--request-rate") == "2.5" and "--concurrency" not in cmd.argv
        assert "--warmup-request-count" not in cmd.argv and "AQBENCH_TAP_DIR" not in cmd.env
        words = shlex.split(cmd.shell)
        assert words[len(cmd.env) - 1:] == cmd.argv  # every variable but TMPDIR, then argv
        json_path, sh_path = cmd.save(tmp_path / "saved")
        assert json.loads(json_path.read_text())["argv"] == cmd.argv and cmd.shell in sh_path.read_text()


    def test_reproduce_line_carries_no_temporary_tmpdir(self, tmp_path: Path) -> None:
        """A deep run folder gets a short /tmp/aqbench-tmp-* TMPDIR that is removed after the run: the
        shell line (report's reproduce command, aiperf_command.sh) must not name it."""
        deep = tmp_path / ("d" * 60) / "aiperf" / "artifacts"
        cmd = build_command(WorkloadConfig(), base_url="http://h", model="m", input_file=tmp_path / "i",
                            artifact_dir=deep, tokenizer=tmp_path / "t")
        assert cmd.env["TMPDIR"].startswith("/tmp/aqbench-tmp-")
        assert "TMPDIR" not in cmd.shell and cmd.env["TMPDIR"] not in cmd.shell
        assert f"AQBENCH_TAP_DIR={deep.parent / 'tap'}" in cmd.shell

    def test_worker_gc_is_asked_for_only_when_wanted(self, tmp_path: Path) -> None:
        """`worker_gc` (what soaks pass) asks aqbench's AIPerf worker entry to keep the cycle collector on,
        in the environment and in the reproduce line; a run without it leaves AIPerf's own setting."""
        kw = dict(base_url="http://h", model="m", input_file=tmp_path / "i", artifact_dir=tmp_path / "a",
                  tokenizer=tmp_path / "t")
        soak = build_command(WorkloadConfig(), worker_gc=True, **kw)  # type: ignore[arg-type]
        plain = build_command(WorkloadConfig(), **kw)  # type: ignore[arg-type]
        assert soak.env["AQBENCH_WORKER_GC"] == "1" and "AQBENCH_WORKER_GC=1" in soak.shell
        assert "AQBENCH_WORKER_GC" not in plain.env and "AQBENCH_WORKER_GC" not in plain.shell
        assert soak.argv == plain.argv

    def test_timing_waits_by_default_and_stock_is_asked_for(self, tmp_path: Path) -> None:
        """Every run waits for a freed slot (no spinning timing manager) unless `[workload] timing = "stock"`;
        a soak or sweep (`timing_wait=True`) waits whatever the workload says; argv is the same either way."""
        kw = dict(base_url="http://h", model="m", input_file=tmp_path / "i", artifact_dir=tmp_path / "a",
                  tokenizer=tmp_path / "t")
        plain = build_command(WorkloadConfig(), **kw)  # type: ignore[arg-type]
        stock = build_command(WorkloadConfig(timing="stock"), **kw)  # type: ignore[arg-type]
        forced = build_command(WorkloadConfig(timing="stock"), timing_wait=True, **kw)  # type: ignore[arg-type]
        assert plain.env["AQBENCH_TIMING_WAIT"] == "1" and "AQBENCH_TIMING_WAIT=1" in plain.shell
        assert "AQBENCH_TIMING_WAIT" not in stock.env and "AQBENCH_TIMING_WAIT" not in stock.shell
        assert forced.env["AQBENCH_TIMING_WAIT"] == "1"
        assert plain.argv == stock.argv == forced.argv

    def test_export_level_records_drops_the_raw_export(self, tmp_path: Path) -> None:
        """A run asked for "records" (soaks: hours of load) tells AIPerf so, in argv and the reproduce line,
        and nothing else changes; the default stays "raw" (every body kept as evidence)."""
        kw = dict(base_url="http://h", model="m", input_file=tmp_path / "i", artifact_dir=tmp_path / "a",
                  tokenizer=tmp_path / "t")
        lean = build_command(WorkloadConfig(), export_level="records", **kw)  # type: ignore[arg-type]
        plain = build_command(WorkloadConfig(), **kw)  # type: ignore[arg-type]
        assert _flag(lean.argv, "--export-level") == "records" and "--export-level records" in lean.shell
        assert _flag(plain.argv, "--export-level") == "raw"
        i = plain.argv.index("--export-level") + 1
        assert lean.argv[:i] + lean.argv[i + 1:] == plain.argv[:i] + plain.argv[i + 1:]


class TestJudgeArtifacts:
    def _folder(self, tmp_path: Path, *, marker: dict | None, agg: dict | None) -> Path:
        if marker is not None:
            (tmp_path / ".aiperf_results_ready.json").write_text(json.dumps(marker))
        if agg is not None:
            (tmp_path / "profile_export_aiperf.json").write_text(json.dumps(agg))
        (tmp_path / "phase_manifest.json").write_bytes((DATA / "phase_manifest.json").read_bytes())
        return tmp_path

    def test_classifications(self, tmp_path: Path) -> None:
        """Complete, partial (errors or no marker), cancelled and failed follow the files, not the exit code."""
        agg = {"request_count": {"avg": 8.0}, "error_request_count": {"avg": 0.0}, "was_cancelled": False}
        (tmp_path / "ok").mkdir()
        ok = self._folder(tmp_path / "ok", marker={"ready": True, "was_cancelled": False, "partial": False}, agg=agg)
        assert judge_artifacts(ok, returncode=0, stopped_early=False, records=8).classification == "complete"
        assert judge_artifacts(ok, returncode=0, stopped_early=True, records=8).classification == "cancelled"
        (tmp_path / "err").mkdir()
        err = self._folder(tmp_path / "err", marker={"ready": True, "was_cancelled": False, "partial": False},
                           agg={**agg, "error_request_count": {"avg": 2.0}})
        j = judge_artifacts(err, returncode=0, stopped_early=False, records=10)
        assert (j.classification, j.reason) == ("partial", "2 of 10 profiling requests failed")
        assert j.aggregate["phases"]["profiling"]["total"] == 8
        (tmp_path / "term").mkdir()
        term = self._folder(tmp_path / "term", marker=None, agg=None)
        assert judge_artifacts(term, returncode=143, stopped_early=False, records=5).classification == "partial"
        assert judge_artifacts(term, returncode=1, stopped_early=False, records=0).classification == "failed"


class TestInstall:
    def test_installed_version_and_fingerprint(self) -> None:
        """The installed AIPerf is 0.13.0 and has a sha256 fingerprint of its RECORD."""
        inst = check_install()
        assert inst.version == "0.13.0" and len(inst.fingerprint) == 64 and Path(inst.executable).is_file()
