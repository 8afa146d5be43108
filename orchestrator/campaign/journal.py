"""`campaign.jsonl`: the driver's append-only journal of campaign events, and its reader (the run journal's
line file and reader, orchestrator/spine/journal.py)."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from orchestrator.campaign.events import (
    AnyCampaignEvent,
    CampaignEvent,
    CampaignFinished,
    CampaignStarted,
    ModelFinished,
)
from orchestrator.spine.journal import JournalFile, read_lines

__all__ = ["CampaignJournal", "read_campaign"]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(AnyCampaignEvent)
_SYNC_KINDS = (CampaignStarted, ModelFinished, CampaignFinished)


# One line per event, flushed as written, fsynced at the events a resume or a report depends on. A torn last
# line (a driver killed mid-write) is skipped on read, corruption elsewhere is a JournalError naming the line.
class CampaignJournal:
    """Appends campaign events to `path`, stamping `unix_ns` when the producer left it 0. Blocks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = JournalFile(path)

    def write(self, event: CampaignEvent) -> CampaignEvent:
        if not event.unix_ns:
            event = msgspec.structs.replace(event, unix_ns=time.time_ns())
        self._file.append(_encoder.encode(event) + b"\n", sync=isinstance(event, _SYNC_KINDS))
        return event

    def close(self) -> None:
        self._file.close()


def read_campaign(path: str | Path) -> list[AnyCampaignEvent]:
    """Every event of a campaign journal, in order. Blocks (file read)."""
    return [event for _, _, event in read_lines(
        Path(path), _decoder.decode, what="campaign journal", hint="pass a campaign folder that holds campaign.jsonl")]
