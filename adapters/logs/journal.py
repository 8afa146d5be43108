"""aqbench journal lines (`events.jsonl`) decoded into the events they are, unchanged.
The decoder is built on the same `AnyEvent` union as orchestrator.spine.journal.decode_event (adapters may
import only orchestrator.events), so a line decodes here exactly as the journal reader decodes it."""

from __future__ import annotations

from functools import cache

import msgspec

from adapters.logs.formats import LineFormat
from orchestrator.events import AnyEvent

__all__ = ["JOURNAL", "decode_journal_line"]

@cache
def _decoder() -> msgspec.json.Decoder[AnyEvent]:
    """Built on first use: the union's decoder takes tens of ms, which an ingest of other formats never needs."""
    return msgspec.json.Decoder(AnyEvent)


def decode_journal_line(line: bytes) -> AnyEvent:
    return _decoder().decode(line)


JOURNAL = LineFormat("journal", "records", decode_journal_line)
