"""The reference server's heap flags: --malloc-trim-every trims (every 10 s by default), --malloc-mmap-threshold-kib pins
glibc's mmap threshold, --tracemalloc-snapshots writes allocation sites."""

from __future__ import annotations

import argparse
import inspect
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from _reference_server import REPO, reference_server

from adapters.reference.heap import WARM_UP_ENV, SnapshotWriter, limit_arenas, trim_heap
from adapters.reference.serve import add_server_arguments, heap_from_args


def _args(*flags: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_server_arguments(p)
    return p.parse_args(["--model-name", "m", *flags])


def _metric(text: str, name: str) -> float:
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m, f"{name} missing from /metrics:\n{text}"
    return float(m.group(1))


class TestFlags:
    def test_defaults(self):
        heap = heap_from_args(_args(), environ={})
        assert heap.malloc_trim_every_s == 10.0 and heap.mmap_threshold_kib == 0 and heap.tracemalloc_dir is None
        assert heap.active == ["warm_up", "malloc_arenas=2", "malloc_trim"]

    def test_warm_up_and_arena_cap_can_be_turned_off(self):
        assert heap_from_args(_args("--no-warm-up", "--malloc-arenas", "0",
                                         "--malloc-trim-every", "0"), environ={}).active == []

    def test_the_environment_turns_the_warm_up_off_and_a_bad_value_is_named(self):
        assert heap_from_args(_args(), environ={WARM_UP_ENV: "0"}).active == ["malloc_arenas=2", "malloc_trim"]
        assert heap_from_args(_args(), environ={WARM_UP_ENV: "1"}).active == ["warm_up", "malloc_arenas=2", "malloc_trim"]
        with pytest.raises(ValueError, match=f"{WARM_UP_ENV}='off'"):
            heap_from_args(_args(), environ={WARM_UP_ENV: "off"})

    def test_both_flags_parsed(self, tmp_path: Path):
        heap = heap_from_args(_args("--malloc-trim-every", "30", "--tracemalloc-snapshots", str(tmp_path),
                                    "--tracemalloc-every", "120"), environ={})
        assert (heap.malloc_trim_every_s, heap.tracemalloc_dir, heap.tracemalloc_every_s) == (30.0, tmp_path, 120.0)
        assert heap.active == ["warm_up", "malloc_arenas=2", "malloc_trim", "tracemalloc"]
        pinned = heap_from_args(_args("--malloc-mmap-threshold-kib", "128"), environ={})
        assert pinned.active == ["warm_up", "malloc_arenas=2", "mmap_threshold=128KiB", "malloc_trim"]

    @pytest.mark.parametrize("flags", [("--malloc-trim-every", "-1"), ("--tracemalloc-every", "0")])
    def test_bad_durations_are_refused_by_the_parser(self, flags: tuple[str, ...], capsys: pytest.CaptureFixture[str]):
        """A negative trim period or a zero snapshot period is no duration: the parser refuses it, naming the flag."""
        with pytest.raises(SystemExit):
            _args(*flags)
        assert f"argument {flags[0]}: {flags[1]!r} is not a positive duration" in capsys.readouterr().err

    def test_old_spellings_still_work(self):
        """--malloc-trim-every-s and --tracemalloc-every-s (seconds) stay for one release, as the new flags."""
        args = _args("--malloc-trim-every-s", "30", "--tracemalloc-every-s", "120")
        assert (args.malloc_trim_every, args.tracemalloc_every) == (30.0, 120.0)

    @pytest.mark.parametrize("flags, named", [(("--malloc-arenas", "-1"), "--malloc-arenas"),
                                              (("--malloc-mmap-threshold-kib", "-1"), "--malloc-mmap-threshold-kib"),
                                              (("--malloc-mmap-threshold-kib", "40000"),
                                               "--malloc-mmap-threshold-kib")])
    def test_bad_values_name_the_flag(self, flags: tuple[str, ...], named: str):
        with pytest.raises(ValueError, match=named):
            heap_from_args(_args(*flags))


class TestTrim:
    def test_glibc_trim_answers(self):
        """On glibc (this project's Linux) malloc_trim is reached through ctypes: True or False, never None."""
        assert trim_heap() in (True, False)

    def test_glibc_takes_the_arena_cap(self):
        assert limit_arenas(2) is True

    @pytest.mark.parametrize("fixed", [True, False])
    def test_a_fixed_mmap_threshold_does_not_slide_after_a_large_free(self, fixed: bool):
        """glibc alone raises its threshold to the largest mmapped block freed, so a 1 MiB buffer allocated after
        a 4 MiB one is freed comes from the heap; pinned, it is still mmapped (and goes back to the kernel when
        freed). Counted by mallinfo2's mmapped-block count, in a fresh process (the threshold is per process)."""
        code = ("import ctypes, sys\n"
                "from adapters.reference.heap import fix_mmap_threshold\n"
                "class Info(ctypes.Structure):\n"
                "    _fields_ = [(n, ctypes.c_size_t) for n in ('arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', "
                "'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost')]\n"
                "libc = ctypes.CDLL('libc.so.6')\n"
                "libc.mallinfo2.restype = Info\n"
                "if sys.argv[1] == 'fixed':\n"
                "    assert fix_mmap_threshold(128) is True\n"
                "big = bytearray(4 << 20)\n"
                "del big\n"
                "before = libc.mallinfo2().hblks\n"
                "buf = bytearray(1 << 20)\n"
                "print(libc.mallinfo2().hblks - before)\n")
        done = subprocess.run([sys.executable, "-c", code, "fixed" if fixed else "glibc"], cwd=REPO,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        assert int(done.stdout) == (1 if fixed else 0)


class TestSnapshots:
    def test_growth_is_named_by_its_line(self, tmp_path: Path):
        writer = SnapshotWriter(tmp_path)
        try:
            baseline = writer.write()
            here = inspect.currentframe()
            assert here is not None
            line = f"{Path(__file__).name}:{here.f_lineno + 1}"
            kept = [bytearray(1024) for _ in range(2000)]  # about 2 MiB from this one line
            second = writer.write()
        finally:
            writer.close()
        assert [baseline.name, second.name] == ["tracemalloc-000.txt", "tracemalloc-001.txt"]
        assert "baseline" in baseline.read_text()
        since_start = second.read_text().split("## since the previous snapshot")[0]
        grown = [row for row in since_start.splitlines() if row.endswith(line)]
        assert grown, f"{line} not among the grown sites:\n{since_start}"
        assert float(grown[0].split()[0]) > 1500  # KiB
        assert len(kept) == 2000


def test_server_trims_and_snapshots(tmp_path: Path):
    """Through the real server: the ready line names both chores, /metrics counts trims, DIR gets snapshots."""
    snaps = tmp_path / "snaps"
    with reference_server(tmp_path, "--malloc-trim-every", "0.05", "--tracemalloc-snapshots", str(snaps),
                          "--tracemalloc-every", "0.2", warm_up=True) as server:
        deadline = time.monotonic() + 60
        while True:
            with urllib.request.urlopen(server.url + "/metrics", timeout=10) as r:
                text = r.read().decode()
            if _metric(text, "aqbench_reference_malloc_trims_total") >= 2 and \
                    _metric(text, "aqbench_reference_tracemalloc_snapshots_total") >= 2:
                break
            assert time.monotonic() < deadline, f"the heap chores did not run:\n{text}"
            time.sleep(0.05)  # polling another process's counters, not synchronising threads
    assert "heap=warm_up,malloc_arenas=2,malloc_trim,tracemalloc" in server.stderr.read_text()
    assert (snaps / "tracemalloc-000.txt").is_file() and (snaps / "tracemalloc-001.txt").is_file()


def test_warm_up_takes_first_use_memory_before_the_first_request():
    """Engine.warm_up imports what the first resampled request would (scipy.signal) and runs every stage."""
    code = ("import sys\n"
            "from adapters.reference.engine import Engine\n"
            "e = Engine(workers=2)\n"
            "assert 'scipy.signal' not in sys.modules, 'imported by the load already'\n"
            "e.warm_up()\n"
            "assert 'scipy.signal' in sys.modules\n"
            "print('warm')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0 and done.stdout.strip() == "warm", done.stderr[-2000:]


def test_warm_up_asks_every_analysis():
    """One warm-up wording per analysis the engine has: a kind left out would take its memory at its first request."""
    from adapters.reference.engine import _HANDLERS, WARM_UP_QUESTIONS
    from adapters.reference.router import route
    assert {route(q).kind for q in WARM_UP_QUESTIONS} == set(_HANDLERS)
