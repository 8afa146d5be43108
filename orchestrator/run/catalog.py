"""The run folders under `[run] output_dir`: each one's kind, status and size read from its journal's first
and last lines (never a whole fold), and the pruning plan by count or age that spares runs still being written."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec

from orchestrator.dataset.clip_cache import ClipCache, referenced_hashes
from orchestrator.run.writing import is_being_written
from orchestrator.spine.journal import is_compact, read_lines

__all__ = ["RunEntry", "PrunePlan", "Pruned", "list_runs", "plan_prune", "prune"]

_JOURNALS = ("events.jsonl", "events.jsonl.zst", "campaign.jsonl")
_STARTS = ("run_started", "campaign_started")
_ENDS = ("run_finished", "campaign_finished")
_TAIL_BYTES = 256 * 1024  # a journal's last lines: RunFinished, or the torn line of an interrupted run
_QUIET_S = 15 * 60.0  # a journal with no end and no mark, written to this recently, may still be live


class _Ends(msgspec.Struct, kw_only=True):
    """The few fields of RunStarted/RunFinished (or the campaign's) that a listing needs; others ignored."""

    kind: str = ""
    ts_ns: int = 0
    command: str = ""
    status: str = ""


_ends_decoder = msgspec.json.Decoder(_Ends)


class RunEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One run folder: its kind (`qualify`, `soak`, ...; `campaign`), status (RunFinished's, `running` while
    a process writes it, `interrupted` when its writer died without one), start time and size on disk."""

    run_id: str
    path: str
    kind: str
    status: str
    started_unix_ns: int
    size_bytes: int
    live: bool


class PrunePlan(msgspec.Struct, frozen=True, kw_only=True):
    """The runs to remove, and those the rules picked but that are spared as still being written."""

    remove: list[RunEntry]
    spared: list[RunEntry]


class Pruned(msgspec.Struct, frozen=True, kw_only=True):
    """What a prune removed (or, in a dry run, would): runs, unreferenced cache entries, and their bytes."""

    runs: list[RunEntry]
    clips: list[str]
    run_bytes: int
    clip_bytes: int


def _decode(line: bytes) -> _Ends | None:
    try:
        return _ends_decoder.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _first_and_last(journal: Path) -> tuple[_Ends | None, _Ends | None]:
    """The journal's start event (its first line) and its end event (among its last lines), if any. A compact
    journal (one zstd stream) is read whole: decompressing is far cheaper than the run that wrote it."""
    if is_compact(journal):
        first = end = None
        for n, raw, _ in read_lines(journal, bytes):
            if n == 1:
                first = _decode(raw)
            elif b'_finished"' in raw and (ev := _decode(raw)) is not None and ev.kind in _ENDS:
                end = ev
        return (first if first is not None and first.kind in _STARTS else None), end
    with journal.open("rb") as f:
        first = _decode(f.readline())
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - _TAIL_BYTES))
        tail = f.read()
    end = None
    for line in reversed(tail.splitlines()):
        if b'_finished"' not in line:  # cheap test before decoding
            continue
        ev = _decode(line)
        if ev is not None and ev.kind in _ENDS:
            end = ev
            break
    return (first if first is not None and first.kind in _STARTS else None), end


def _size(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                continue
    return total


def _entry(folder: Path, now_s: float) -> RunEntry | None:
    journal = next((folder / j for j in _JOURNALS if (folder / j).is_file()), None)
    if journal is None:
        return None
    start, end = _first_and_last(journal)
    marked = is_being_written(folder)
    quiet = now_s - journal.stat().st_mtime
    live = end is None and (marked is True or (marked is None and quiet < _QUIET_S))
    kind = "campaign" if journal.name == "campaign.jsonl" else (start.command if start else "") or "?"
    status = end.status if end is not None else "running" if live else "interrupted"
    started = start.ts_ns if start and start.ts_ns else int(journal.stat().st_mtime * 1e9)
    return RunEntry(run_id=folder.name, path=str(folder), kind=kind, status=status or "?",
                    started_unix_ns=started, size_bytes=_size(folder), live=live)


def list_runs(root: Path, *, now_s: float | None = None) -> list[RunEntry]:
    """Every run folder directly under `root` (one with `events.jsonl`, `events.jsonl.zst` or `campaign.jsonl`), oldest first.
    Dot-named folders (the clip cache) are not runs. Blocks (a walk per folder for its size)."""
    now = time.time() if now_s is None else now_s
    try:
        folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except FileNotFoundError:
        return []
    entries = [e for e in (_entry(p, now) for p in folders) if e is not None]
    return sorted(entries, key=lambda e: (e.started_unix_ns, e.run_id))


def plan_prune(entries: Sequence[RunEntry], *, keep: int | None = None, older_than_s: float | None = None,
               now_s: float | None = None, force: bool = False) -> PrunePlan:
    """The runs beyond the newest `keep`, and those started more than `older_than_s` ago (both rules, when
    both are given, each picking); a run still being written is spared unless `force`."""
    now = time.time() if now_s is None else now_s
    newest_first = sorted(entries, key=lambda e: (e.started_unix_ns, e.run_id), reverse=True)
    picked: list[RunEntry] = []
    for i, e in enumerate(newest_first):
        beyond = keep is not None and i >= keep
        old = older_than_s is not None and now - e.started_unix_ns / 1e9 > older_than_s
        if beyond or old:
            picked.append(e)
    picked.reverse()
    remove = [e for e in picked if force or not e.live]
    return PrunePlan(remove=remove, spared=[e for e in picked if e.live and not force])


def prune(plan: PrunePlan, root: Path, cache: ClipCache | None, *, dry_run: bool,
          cache_grace_s: float = 3600.0) -> Pruned:
    """Remove the plan's runs, then the cache entries that no run left under `root` names (and that were not
    written or reused within `cache_grace_s`: a run starting now may hold one its manifest does not name
    yet). With `dry_run` nothing is removed: the result says what would be. Blocks."""
    gone = {e.path for e in plan.remove}
    if not dry_run:
        for e in plan.remove:
            try:
                shutil.rmtree(e.path)
            except FileNotFoundError:  # removed meanwhile by someone else
                continue
    clips: list[Path] = []
    if cache is not None:
        remaining = [p for p in _run_folders(root) if str(p) not in gone]
        sizes = {p: p.stat().st_size for p in cache.entries()}
        clips = cache.prune(referenced_hashes(remaining), grace_s=cache_grace_s, dry_run=dry_run)
        clip_bytes = sum(sizes.get(p, 0) for p in clips)
    else:
        clip_bytes = 0
    return Pruned(runs=list(plan.remove), clips=[str(p) for p in clips],
                  run_bytes=sum(e.size_bytes for e in plan.remove), clip_bytes=clip_bytes)


def _run_folders(root: Path) -> list[Path]:
    try:
        return [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except FileNotFoundError:
        return []
