"""ingest --follow: read files as they grow (and rotate) until cancelled."""

from __future__ import annotations

import anyio
import anyio.lowlevel

from orchestrator.ingest.inputs import expand_inputs, is_compressed
from orchestrator.ingest.reader import Ingest
from orchestrator.spine.ports import LineFollowing

__all__ = ["run_follow"]


async def run_follow(
    ingest: Ingest, specs: list[str], *, poll_s: float = 0.05, rescan_s: float = 1.0,
    stop: anyio.Event | None = None,
) -> None:
    """Follow every input like `tail -F` until `stop` is set or the caller's scope is cancelled.

    Specs are expanded again every `rescan_s` so new files (a rotated-in name, a new run folder) join.
    Compressed files cannot grow and are read once. Line numbers restart at 1 after a truncation or
    a replacement (for a rotation, lines drained from the old file still count in the old numbering).
    On the way out (cancellation included) each file's final, possibly unterminated line is read.
    """
    followers: dict[str, LineFollowing | None] = {}
    stop = stop or anyio.Event()
    next_scan = 0.0
    try:
        while not stop.is_set():
            now = anyio.current_time()
            if now >= next_scan:
                next_scan = now + rescan_s
                for path in expand_inputs(specs, known_name=ingest.codecs.is_known_name, allow_missing=True):
                    if path in followers:
                        continue
                    if is_compressed(path):
                        followers[path] = None
                        ingest.feed_path(path)
                    else:
                        followers[path] = ingest.codecs.follow(path, poll_s=poll_s)
            busy = False
            for path, fol in followers.items():
                if fol is not None:
                    busy = _read(ingest, path, fol, final=False) or busy
            ingest.flush_out()
            if busy:  # a follower behind its file reads a step at a time: read on (a checkpoint, not a wait)
                await anyio.lowlevel.checkpoint()
                continue
            with anyio.move_on_after(poll_s):
                await stop.wait()
    finally:
        for path, fol in followers.items():
            if fol is not None:
                _read(ingest, path, fol, final=True)
                fol.close()
        ingest.flush_out()


def _read(ingest: Ingest, path: str, fol: LineFollowing, *, final: bool) -> bool:
    """Hand what `fol` has to `ingest`; whether there were lines."""
    before, torn = fol.truncations, fol.torn
    lines = fol.read_available(final=final)
    if fol.truncations != before:
        ingest.restart(path)
    if fol.torn != torn and lines:
        # The follower handed out an unterminated last line: it goes through the torn-line path.
        ingest.feed_lines(path, lines[:-1])
        ingest.feed(path, lines[-1])
        ingest.end(path)
    else:
        ingest.feed_lines(path, lines)
    return bool(lines)
