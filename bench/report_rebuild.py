"""Time `aqbench report RUN_DIR` on a synthetic compact soak journal of many requests (goal: 200,000 in 60 s).

The journal is made from the soak fixture tests/data/journals/soak-v2 (read as the current schema): its header,
then its middle windows over and over, each request's events (server and client records, the join, the
verdict) copied with new request ids until a window holds its share, every absolute time shifted to the
window's place; written as `events.jsonl.zst` by orchestrator.spine.journal.JournalFile (the soak's writer), with a
block closed per second of soak time as the live writer closes them. The report runs as a child process; its
CPU seconds and peak RSS come from its resource usage (os.wait4).

Run: nice -n 19 .venv/bin/python bench/report_rebuild.py [--requests 200000] [--hours 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec

from orchestrator.events import SCHEMA_VERSION, AnyEvent, RunStarted, SoakWindowClosed, SoakWindowOpened
from orchestrator.spine.journal import COMPACT_JOURNAL, JournalFile, encode_event, read_journal

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "journals" / "soak-v2" / "events.jsonl.gz"
_NS_ABSOLUTE = 10**17  # a unix-ns time (about 1.8e18 now); smaller *_ns values are durations or mono clocks


def _template(tmp: Path) -> tuple[list[AnyEvent], list[list[AnyEvent]], dict[int, SoakWindowClosed], list[AnyEvent]]:
    """The fixture's header, its windows (opened .. before the next opened or the first close), each window's
    SoakWindowClosed by index, and its footer (the rest, closes left out)."""
    plain = tmp / "template.jsonl"
    plain.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    events, _torn = read_journal(plain)
    opened = [i for i, e in enumerate(events) if isinstance(e, SoakWindowOpened)]
    first_close = min(i for i, e in enumerate(events) if isinstance(e, SoakWindowClosed))
    windows = [events[a:b] for a, b in zip(opened, [*opened[1:], first_close], strict=True)]
    closes = {e.index: e for e in events if isinstance(e, SoakWindowClosed)}
    footer = [e for e in events[first_close:] if not isinstance(e, SoakWindowClosed)]
    return events[: opened[0]], windows, closes, footer


def _shifted(ev: AnyEvent, dt_ns: int, fields: dict[type, tuple[str, ...]]) -> dict[str, int]:
    names = fields.get(type(ev))
    if names is None:
        names = fields[type(ev)] = tuple(f for f in type(ev).__struct_fields__ if f.endswith("_ns"))
    out = {}
    for name in names:
        value = getattr(ev, name)
        if isinstance(value, int) and (value >= _NS_ABSOLUTE or (name == "mono_ns" and value > 0)):
            out[name] = value + dt_ns
    return out


def synthetic_events(requests: int, hours: float, tmp: Path) -> Iterator[tuple[float, AnyEvent]]:
    """(soak seconds, event) in journal order, seq renumbered."""
    header, windows, closes, footer = _template(tmp)
    middle = windows[1:-1] or windows
    first_ts = header[0].ts_ns
    span_ns = max(e.ts_ns for e in middle[0]) - middle[0][0].ts_ns + 1
    count = max(1, int(hours * 3600e9 / span_ns))
    per_window = requests // count
    fields: dict[type, tuple[str, ...]] = {}
    seq = 0

    def stamp(ev: AnyEvent, dt_ns: int, **extra: object) -> tuple[float, AnyEvent]:
        nonlocal seq
        seq += 1
        ev = msgspec.structs.replace(ev, seq=seq, **{**_shifted(ev, dt_ns, fields), **extra})  # type: ignore[arg-type]
        return (ev.ts_ns - first_ts) / 1e9, ev

    for ev in header:
        yield stamp(ev, 0, **({"schema_version": SCHEMA_VERSION} if isinstance(ev, RunStarted) else {}))
    for k in range(count):
        tpl = middle[k % len(middle)]
        dt_ns = middle[0][0].ts_ns + k * span_ns - tpl[0].ts_ns
        shift = k + 1 - tpl[0].index  # type: ignore[union-attr]  # a segment starts with its SoakWindowOpened
        rids = list(dict.fromkeys(r for e in tpl if (r := getattr(e, "request_id", "")) ))
        want = per_window + (requests - per_window * count if k == count - 1 else 0)
        copies = -(-want // max(1, len(rids)))
        for ev in tpl:
            rid = getattr(ev, "request_id", "")
            extra: dict[str, object] = {}
            window = getattr(ev, "window", "")
            if window.startswith("soak/w"):  # the template's window numbers, moved to this copy's
                extra["window"] = f"soak/w{int(window[6:]) + shift:04d}"
            if isinstance(ev, SoakWindowOpened | SoakWindowClosed):
                extra["index"] = ev.index + shift
            if not rid:
                yield stamp(ev, dt_ns, **extra)
                continue
            # One request's events in the template, spread over the window as copies with their own ids.
            idx = rids.index(rid)
            for c in range(copies):
                if c * len(rids) + idx >= want:
                    break
                step = span_ns * (c * len(rids) + idx) // max(1, want) - span_ns * idx // max(1, len(rids))
                yield stamp(ev, dt_ns + step, request_id=f"{rid[:24]}-{k:04d}-{c:05d}", **extra)
        close = closes[tpl[0].index]  # type: ignore[union-attr]
        summary = close.summary
        if summary is not None:
            summary = msgspec.structs.replace(summary, window=f"soak/w{k + 1:04d}", index=k + 1,
                                              **_shifted(summary, dt_ns, fields))  # type: ignore[arg-type]
        end_ns = tpl[0].ts_ns + dt_ns + span_ns  # closed as the window ends (the fixture closed all at its end)
        yield stamp(close, 0, window=f"soak/w{k + 1:04d}", index=k + 1, summary=summary, ts_ns=end_ns)
    for ev in footer:
        yield stamp(ev, middle[0][0].ts_ns + count * span_ns - footer[0].ts_ns if footer else 0)


def write_journal(run_dir: Path, requests: int, hours: float, tmp: Path) -> tuple[int, int]:
    """The compact journal in `run_dir`; returns (events, bytes)."""
    out = JournalFile(run_dir / COMPACT_JOURNAL)
    buf, n, block_at = bytearray(), 0, 0.0
    for at, ev in synthetic_events(requests, hours, tmp):
        buf += encode_event(ev)
        buf += b"\n"
        n += 1
        if at >= block_at + 1.0:  # the live writer closes a block at least once a second
            out.append(buf)
            out.close_block()
            buf.clear()
            block_at = at
    out.append(buf)
    out.close()
    return n, (run_dir / COMPACT_JOURNAL).stat().st_size


def _child(argv: list[str]) -> tuple[float, float, float, int]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    return (time.perf_counter() - t, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            os.waitstatus_to_exitcode(status))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--hours", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="make the run folder here (kept) instead of a temporary one")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        run_dir = args.keep or tmp / "run"
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        t = time.perf_counter()
        events, size = write_journal(run_dir, args.requests, args.hours, tmp)
        print(f"journal: {events} events, {size / 2**20:.1f} MiB compact ({size / args.requests:.0f} B per request), "
              f"written in {time.perf_counter() - t:.0f} s: {run_dir / COMPACT_JOURNAL}")
        for _ in range(args.repeat):
            wall, cpu, rss, rc = _child([sys.executable, "-m", "orchestrator", "report", str(run_dir)])
            made = sorted(p.name for p in run_dir.iterdir() if p.name != COMPACT_JOURNAL)
            print(f"aqbench report: exit {rc}, wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss:.0f} MiB "
                  f"(goal: wall <= 60 s on 2 cores; load average {os.getloadavg()[0]:.1f}); wrote {', '.join(made)}")


if __name__ == "__main__":
    main()
