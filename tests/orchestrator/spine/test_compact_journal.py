"""The compact journal (`events.jsonl.zst`): it folds to the reports its plain twin folds to, a kill loses at most
its open block (named as a torn line is), a waiting reader gets the block closed, and the live tail follows it."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from orchestrator.events import LogLine
from orchestrator.live.tail import LineTail
from orchestrator.reports import write_reports
from orchestrator.reports.soak import write_soak_report
from orchestrator.spine.bus import Bus
from orchestrator.spine.journal import COMPACT_JOURNAL, JournalFile, JournalWriter, journal_path, read_journal

FIXTURES = Path(__file__).parents[2] / "data" / "journals"


def _lines(name: str) -> list[bytes]:
    return gzip.decompress((FIXTURES / name / "events.jsonl.gz").read_bytes()).splitlines(keepends=True)


def test_a_compact_journal_folds_to_the_reports_of_its_plain_twin(tmp_path: Path) -> None:
    """The soak fixture written plain and compact (blocks of a few lines, as a slow soak closes them) rebuilds
    byte-identical report.* and soak.*, and holds a fraction of the plain bytes."""
    lines = _lines("soak-v2")
    plain, compact = tmp_path / "plain", tmp_path / "compact"
    plain.mkdir()
    (plain / "events.jsonl").write_bytes(b"".join(lines))
    out = JournalFile(compact / COMPACT_JOURNAL)
    for i in range(0, len(lines), 7):
        out.append(b"".join(lines[i:i + 7]), close=True)
    out.close()
    assert journal_path(compact) == compact / COMPACT_JOURNAL and journal_path(plain) == plain / "events.jsonl"
    for folder in (plain, compact):
        write_reports(journal_path(folder), folder)
        write_soak_report(journal_path(folder), folder)
    names = sorted(p.name for p in plain.iterdir() if p.name != "events.jsonl")
    assert names == sorted(p.name for p in compact.iterdir() if p.name != COMPACT_JOURNAL)
    assert {"report.json", "report.md", "report.html", "soak.json", "soak.md", "soak.html"} <= set(names)
    for name in names:
        assert (compact / name).read_bytes() == (plain / name).read_bytes(), name
    assert (compact / COMPACT_JOURNAL).stat().st_size * 5 < (plain / "events.jsonl").stat().st_size


def test_a_block_cut_short_is_skipped_and_named(tmp_path: Path) -> None:
    """A stream that stops inside a block (a kill mid-write) replays every closed block's events, and the cut is
    reported as the journal's torn line, after the last whole one."""
    lines = _lines("qualify-v2")[:40]
    path = tmp_path / COMPACT_JOURNAL
    out = JournalFile(path)
    out.append(b"".join(lines[:30]), close=True)
    whole = path.stat().st_size
    out.append(b"".join(lines[30:]), close=True)
    out.close()
    data = path.read_bytes()
    path.write_bytes(data[: whole + (len(data) - whole) // 2])
    events, torn = read_journal(path)
    assert len(events) == 30
    assert torn is not None and torn.line == 31 and b"compressed block cut short" in torn.text
    path.write_bytes(data[:whole])  # ends between blocks: nothing torn
    events, torn = read_journal(path)
    assert len(events) == 30 and torn is None


@pytest.mark.slow
def test_a_killed_compact_writer_keeps_what_it_wrote_before_its_last_second(tmp_path: Path) -> None:
    """SIGKILL of a writer mid-burst: every event published before a one-second pause is in the journal (the
    idle writer closed its block), and what replays is whole and in order."""
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(f"""
        import anyio, pathlib
        from orchestrator.spine.bus import Bus
        from orchestrator.spine.journal import JournalWriter
        from orchestrator.events import LogLine
        async def main():
            bus = Bus("killed")
            async with anyio.create_task_group() as tg:
                await tg.start(JournalWriter(pathlib.Path({str(tmp_path)!r}) / "events.jsonl.zst").run, bus)
                for i in range(300):
                    await bus.publish(LogLine(stream="before", text="x" * 300 + str(i)))
                await anyio.sleep(1.5)
                print("paused", flush=True)
                i = 0
                while True:
                    await bus.publish(LogLine(stream="after", text="y" * 300 + str(i)))
                    i += 1
                    if i % 200 == 0:
                        print(i, flush=True)
                        await anyio.sleep(0)
        anyio.run(main)
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "paused"
    for _ in range(3):
        proc.stdout.readline()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()
    events, _ = read_journal(tmp_path / COMPACT_JOURNAL)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    before = [e for e in events if isinstance(e, LogLine) and e.stream == "before"]
    assert [e.text for e in before] == ["x" * 300 + str(i) for i in range(300)]


def test_a_waiting_reader_gets_the_open_block_closed(tmp_path: Path) -> None:
    """`wait_written` on a compact journal returns once the events are in a closed block, well before the
    writer's one-second close, and a reader of the file then sees them; the finished file ends its stream."""
    path = tmp_path / COMPACT_JOURNAL

    async def main() -> None:
        bus = Bus("waits")
        writer = JournalWriter(path)
        async with anyio.create_task_group() as tg:
            await tg.start(writer.run, bus)
            await bus.publish(LogLine(stream="one", text="first"))
            with anyio.fail_after(5):
                assert await writer.wait_written(bus.statistics().published)
            events, torn = read_journal(path)
            assert [e.text for e in events if isinstance(e, LogLine)] == ["first"] and torn is None
            await bus.aclose()

    anyio.run(main)
    events, torn = read_journal(path)
    assert torn is None and len(events) == 1


def test_the_live_tail_follows_a_compact_journal_block_by_block(tmp_path: Path) -> None:
    """The live page's tail yields a compact journal's lines once their block closes, each line once, and starts
    over when the file is replaced."""
    path = tmp_path / COMPACT_JOURNAL
    out = JournalFile(path)
    tail = LineTail(path)
    out.append(b'{"a":1}\n{"a":2}\n', close=True)
    assert [n for n, _ in tail.lines()] == [1, 2]
    out.append(b'{"a":3}\n')
    assert list(tail.lines()) == []  # the block is still open
    out.close_block()
    assert list(tail.lines()) == [(3, b'{"a":3}\n')]
    out.close()
    path.unlink()
    again = JournalFile(path)
    again.append(b'{"b":1}\n', close=True)
    assert list(tail.lines()) == [(1, b'{"b":1}\n')] and tail.replaced
    again.close()
