"""When soak windows close on a saturated host: each close's journaled time less its window's planned end.

Starts `--busy` busy-loop processes (default: two per core) for the whole soak, then runs `aqbench soak` (the
reference server without speech models, on audioqa-v2's signal items; a checkpoint due at every window's close,
the heaviest case) from this checkout or `--checkout`, and reads every SoakWindowClosed from its journal: lateness
= the event's `ts_ns` (stamped as it was published) - `summary.end_unix_ns` (the window's planned end). A segment's
last window (closed at its AIPerf run's exit, or on time with the run's tail, SoakTail, after it) is shown apart.

Run: .venv/bin/python bench/soak_close.py [--duration 150s] [--window 15s] [--rate 4] [--busy 4] [--checkout DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
from overhead import signal_config  # bench/ is on sys.path as the script's folder

from orchestrator.spine.journal import journal_path, read_lines

ROOT = Path(__file__).resolve().parents[1]


class _Summary(msgspec.Struct):
    end_unix_ns: int
    aiperf_exit_unix_ns: int | None = None


class _Closed(msgspec.Struct):
    """The journal fields this bench reads (a view of SoakWindowClosed and SoakTail)."""

    kind: str
    ts_ns: int = 0
    index: int = 0
    window: str = ""
    summary: _Summary | None = None
    issued: int | dict[str, int] = 0  # a tail's requests (other kinds hold a dict here)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", default="150s")
    p.add_argument("--window", default="15s")
    p.add_argument("--rate", default="4")
    p.add_argument("--busy", type=int, default=2 * (os.cpu_count() or 1))
    p.add_argument("--checkout", default=str(ROOT), help="the aqbench checkout to run (default: this one)")
    args = p.parse_args()
    root = Path(args.checkout).resolve()
    with tempfile.TemporaryDirectory(prefix="aqb-close-") as tmp:
        cfg = signal_config(root / "bench.toml", Path(tmp))
        log = Path(tempfile.gettempdir()) / f"aqb-close-{os.getpid()}.log"
        text = cfg.read_text()
        window_s = float(args.window.rstrip("s"))
        cfg.write_text(text.replace("checkpoint_every_s = 1800.0", f"checkpoint_every_s = {window_s}", 1))
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
        try:
            time.sleep(2.0)
            load = os.getloadavg()
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
            rc = subprocess.call([sys.executable, "-m", "orchestrator", "soak", "--config", str(cfg), "--duration",
                                  args.duration, "--window", args.window, "--rate", args.rate, "--no-stop-early"],
                                 env=env, cwd=str(root), stdout=subprocess.DEVNULL, stderr=log.open("wb"))
            load_end = os.getloadavg()
        finally:
            for b in busy:
                b.kill()
                b.wait()
        if rc not in (0, 1):
            print(f"soak exited {rc}; its stderr: {log}")
        (run_dir,) = list((Path(tmp) / "runs").glob("soak-*"))
        dec = msgspec.json.Decoder(_Closed)
        events = [c for _, _, c in read_lines(journal_path(run_dir), dec.decode)
                  if c.kind in ("soak_window_closed", "soak_tail")]
        closes = [c for c in events if c.kind == "soak_window_closed"]
        tails = {c.window: c.issued for c in events if c.kind == "soak_tail" and isinstance(c.issued, int)}
    print(f"{root}: soak exit {rc}; {args.busy} busy loops on {os.cpu_count()} cores; load average at the start "
          f"{load[0]:.1f}, at the end {load_end[0]:.1f}")
    on_time: list[float] = []
    for c in closes:
        assert c.summary is not None
        late_s = (c.ts_ns - c.summary.end_unix_ns) / 1e9
        at_exit = c.summary.aiperf_exit_unix_ns is not None
        if not at_exit and c.window not in tails:
            on_time.append(late_s)
        print(f"  window {c.index:2d}: closed {late_s:+6.2f} s after its planned end"
              + ("  (its AIPerf run's last: closed at AIPerf's exit)" if at_exit else "")
              + (f"  (its AIPerf run's last: closed on time, {tails[c.window]} request(s) in the run's tail)"
                 if c.window in tails else ""))
    if on_time:
        print(f"  closes while the load went on: {len(on_time)}, max {max(on_time):.2f} s, "
              f"median {sorted(on_time)[len(on_time) // 2]:.2f} s (goal: within 1 s)")


if __name__ == "__main__":
    main()
