"""trtmc-server / reference-server `--records` lines -> ServerRecord, through the live tailer's own
parser (adapters.server_records.parse_server_record), so a line means the same in a run and in ingest.

`ts_ns` and `incarnation` are not in a line: ingest sets them (from `end_unix_ns` and the file name).
"""

from __future__ import annotations

import re

import msgspec

from adapters.logs.formats import LineFormat
from adapters.server_records import parse_server_record
from orchestrator.events import ServerRecord

__all__ = ["SERVER_RECORDS", "decode_server_record", "incarnation_from_name"]

_direct = msgspec.json.Decoder(ServerRecord)
_INCARNATION = re.compile(r"records-(\d+)\.jsonl")


def decode_server_record(line: bytes) -> ServerRecord:
    """One records line; raises ValueError / msgspec errors on a bad line (no `request_id` included).

    Fast path: a line whose fields are all present or absent (no nulls) decodes straight into the
    event, which gives what parse_server_record gives (tests check both on real files) at a third
    of the cost; any line that does not (nulls, bad lines) goes through parse_server_record."""
    try:
        return _direct.decode(line)
    except msgspec.DecodeError:  # ValidationError included
        return parse_server_record(line, source="")


def incarnation_from_name(name: str) -> int:
    """The supervisor names each incarnation's file `records-<incarnation>.jsonl`; 0 otherwise."""
    match = _INCARNATION.search(name)
    return int(match.group(1)) if match else 0


SERVER_RECORDS = LineFormat("server_records", "records", decode_server_record)
