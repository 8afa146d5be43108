"""The short real soaks of tests/e2e/test_soak.py, started at once (tests/conftest.py's `short_soaks`): their
length is their clock, so together they take the longest one's minutes instead of the sum, and the work each
does (requests served) shrinks with the CPU it gets, which none of their assertions needs more of. Two soaks
keep runs of their own: the loaded-machine one (its condition is two spinning processes, not more: with the
others beside it too, a window closed 1.4 s late) and the killed one (tests/e2e/killed_soak.py, its kill timed
to window 2)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from server_env import warmed_env

from orchestrator.live.tail import LineTail
from orchestrator.spine.journal import journal_path, read_lines

REPO = Path(__file__).resolve().parents[2]

# Short soaks on a shared 2-core machine: minutes, not hours, so a few MiB or a few percent between
# short windows extrapolate to large hourly rates (a clean server's first pass over new items grew
# ~15 MiB between two windows: ~3,300 MiB/h). The limits below are scaled to that, the injected leak
# (1 MiB per request, at concurrency 2 for enough requests on a busy machine) is judged against a cap on the
# growth over the soak of 32 MiB, twice the clean server's first-pass growth. The trend rules need 6 judged windows;
# the span they need is lowered to what a 90 s soak has. The rules themselves are unit-tested.
_SOAK = """[soak]
duration_s = {duration}
window_s = {window}
warmup_windows = 1
checkpoint_every_s = 20.0
rss_limit_mib_per_h = {rss_limit}
p99_latency_limit_pct_per_h = 1000000.0
max_error_rate = {max_error_rate}
min_trend_windows = 6
min_trend_span_s = 60.0
rss_growth_limit_mib = {growth_limit}

"""


def config(tmp_path: Path, *, duration: float = 45.0, window: float = 15.0, server_extra: list[str] | None = None,
            max_error_rate: float = 0.001, rss_limit: float = 6000.0, growth_limit: float = 64.0,
            concurrency: int = 1) -> Path:
    text = (REPO / "bench.toml").read_text()
    text = text.replace('output_dir = "runs"', f'output_dir = "{tmp_path / "runs"}"')
    text = re.sub(r"\[soak\][^\[]*", _SOAK.format(duration=duration, window=window, max_error_rate=max_error_rate,
                                                   rss_limit=rss_limit, growth_limit=growth_limit),
                  text)
    # One request at a time (unless a test needs more) keeps the load inside what two shared cores can serve.
    text = text.replace("concurrency = 2\n", f"concurrency = {concurrency}\n")
    # Few items per window: a lower gate than qualify's, so one hard item does not fail a short window.
    text = text.replace("min_pass_rate = 0.9", "min_pass_rate = 0.5").replace("count = 1.0", "count = 0.5")
    return _write_config(tmp_path, text, server_extra or ())


def default_config(tmp_path: Path, *server_args: str, handover_every_s: float = 0.0) -> Path:
    """The default bench.toml as it ships, writing its runs under `tmp_path` (and `server_args` added; with
    `handover_every_s`, AIPerf hands the load over that often)."""
    text = (REPO / "bench.toml").read_text().replace('output_dir = "runs"', f'output_dir = "{tmp_path / "runs"}"')
    if handover_every_s:
        text = text.replace("[soak]\n", f"[soak]\naiperf_handover_every_s = {handover_every_s}\n", 1)
    return _write_config(tmp_path, text, server_args)


def _write_config(tmp_path: Path, text: str, server_args: Sequence[str]) -> Path:
    """`text` with `server_args` appended to the server's argv, written as `tmp_path`/bench.toml."""
    if server_args:
        text = text.replace('"--replicas", "{replicas}"]',
                            '"--replicas", "{replicas}", ' + ", ".join(f'"{a}"' for a in server_args) + "]")
    config = tmp_path / "bench.toml"
    config.write_text(text)
    return config


class Soak(NamedTuple):
    returncode: int
    out: str  # stdout and stderr
    run_dir: Path
    events: list[dict[str, Any]]  # the journal, raw


class Running:
    """One `aqbench soak` subprocess started by the `soaks` fixture; its output goes to a file (nobody reads a
    pipe while the others run)."""

    def __init__(self, tmp_path: Path, config: Path, *extra: str) -> None:
        self.tmp_path = tmp_path
        self.log = tmp_path / "soak.out"
        with self.log.open("w") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "orchestrator", "--log-level", "warning", "soak",
                                          "--config", str(config), *extra], cwd=REPO, stdout=out,
                                         stderr=subprocess.STDOUT, text=True, env=warmed_env())
        self.failure = ""  # what went wrong beside the run (the SIGINT watcher), if anything

    def result(self, timeout_s: float = 420.0) -> Soak:
        self.proc.wait(timeout=timeout_s)
        assert not self.failure, self.failure
        run_dir = run_dir_of(self.tmp_path)
        return Soak(self.proc.returncode, self.log.read_text(), run_dir, events_of(run_dir))

    def stop(self) -> None:
        if self.proc.poll() is None:  # a test failed before reading it: ask it to stop, then insist
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _interrupt_in_window_2(run: Running) -> None:
    """SIGINT once window 2 has answered a request (the SIGINT test's cue)."""
    try:
        wait_for(run.tmp_path, lambda e: e["kind"] == "request_correlated" and e["window"] == "soak/w0002", 300,
                 hint='"soak/w0002"')
        run.proc.send_signal(signal.SIGINT)
    except AssertionError as exc:
        run.failure = f"window 2 never answered: {exc}"
        run.proc.kill()


def run_dir_of(tmp_path: Path) -> Path:
    dirs = sorted((tmp_path / "runs").glob("*soak-*"))
    assert len(dirs) == 1, dirs
    return dirs[0]


def events_of(run_dir: Path) -> list[dict[str, Any]]:
    """The soak's journal so far, plain or compact (a line being written left out)."""
    return [ev for _, _, ev in read_lines(journal_path(run_dir), json.loads)]


def wait_for(tmp_path: Path, pred: Any, timeout_s: float, *, hint: str = "") -> dict[str, Any]:
    """The first journal event `pred` accepts, read as the journal grows: each pass reads only the lines written
    since the last one (and parses only those holding `hint`), so a watcher costs little beside busy soaks."""
    deadline = time.monotonic() + timeout_s
    tail: LineTail | None = None
    while time.monotonic() < deadline:
        runs = sorted((tmp_path / "runs").glob("*soak-*/events.jsonl*"))
        if runs:
            tail = tail or LineTail(runs[0])
            for _, line in tail.lines():
                if hint.encode() in line:
                    ev = json.loads(line)
                    if pred(ev):
                        return ev
        time.sleep(0.1)
    raise AssertionError(f"no matching event within {timeout_s} s")


@contextmanager
def short_soaks(tmp_path_factory: pytest.TempPathFactory, shared: set[int]) -> Iterator[dict[str, Running]]:
    """Start the short soaks at once (their processes added to `shared` while they run) and stop what is left
    at the end: clean, the default 90 s, the leak (with AIPerf handovers), and SIGINT in window 2."""
    def tmp(name: str) -> Path:
        return tmp_path_factory.mktemp(f"soak-{name}")

    runs: dict[str, Running] = {}
    threads: list[threading.Thread] = []
    try:
        t = tmp("clean")
        runs["clean"] = Running(t, config(t))
        t = tmp("default-90s")
        runs["default-90s"] = Running(t, default_config(t), "--duration", "90s", "--window", "30s")
        t = tmp("leak")
        # The longest of them also hands AIPerf's load over every 40 s (twice, start-up allowing): the handover
        # rides a real soak at no cost in suite time. Its 180 s are a bound: the early stop ends it once a look
        # decides the leak (about 2 minutes in; 150 s before the soak could stop early).
        runs["leak"] = Running(t, default_config(t, "--fault-leak-mib", "1", handover_every_s=40.0),
                               "--duration", "180s", "--window", "15s")
        t = tmp("sigint")
        runs["sigint"] = Running(t, config(t, duration=120.0))
        shared.update(r.proc.pid for r in runs.values())
        threads = [threading.Thread(target=_interrupt_in_window_2, args=(runs["sigint"],), daemon=True)]
        for thread in threads:
            thread.start()
        yield runs
    finally:
        for run in runs.values():
            run.stop()
        for thread in threads:
            thread.join(timeout=5)
        shared.difference_update(r.proc.pid for r in runs.values())
