"""`campaign.jsonl`: the driver's append-only journal of campaign events, and its reader.

One line per event, flushed as written, fsynced at the events a resume or a report depends on.
A torn last line (a driver killed mid-write) is skipped on read; corruption elsewhere is a JournalError.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import BinaryIO

import msgspec

from orchestrator.campaign.events import (
    AnyCampaignEvent,
    CampaignEvent,
    CampaignFinished,
    CampaignStarted,
    ModelFinished,
)
from orchestrator.errors import JournalError

__all__ = ["CampaignJournal", "read_campaign"]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(AnyCampaignEvent)
_SYNC_KINDS = (CampaignStarted, ModelFinished, CampaignFinished)


class CampaignJournal:
    """Appends campaign events to `path`, stamping `unix_ns` when the producer left it 0. Blocks."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fh: BinaryIO = path.open("ab")

    def write(self, event: CampaignEvent) -> CampaignEvent:
        if not event.unix_ns:
            event = msgspec.structs.replace(event, unix_ns=time.time_ns())
        self._fh.write(_encoder.encode(event) + b"\n")
        self._fh.flush()
        if isinstance(event, _SYNC_KINDS):
            os.fsync(self._fh.fileno())
        return event

    def close(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()


def read_campaign(path: str | Path) -> list[AnyCampaignEvent]:
    """Every event of a campaign journal, in order. Blocks (file read)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise JournalError(f"{p}: cannot open campaign journal: {exc.strerror}; pass a campaign folder "
                           f"that holds campaign.jsonl") from None
    lines = raw.split(b"\n")
    events: list[AnyCampaignEvent] = []
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            events.append(_decoder.decode(line))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            if i == len(lines):  # no newline after it: torn by a driver killed mid-write
                break
            raise JournalError(f"{p}:{i}: corrupt campaign journal line ({exc}); only the last line may be "
                               f"torn. Line starts: {line[:80]!r}") from None
    return events
