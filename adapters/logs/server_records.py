"""trtmc-server / reference-server `--records` lines -> ServerRecord.

The records' field names are ServerRecord's own (trtmc-server fields plus the reference server's
`audio`, `error_code`, `end_unix_ns`), so lines decode straight into the event in one msgspec call;
fields the event does not carry (`start_unix_ns`, `input_tokens`, ...) are skipped. `ts_ns` and
`incarnation` are not in a line: ingest sets them (from `end_unix_ns` and the file name).
"""

from __future__ import annotations

import re

import msgspec

from adapters.logs.formats import LineFormat
from orchestrator.events import ServerRecord

__all__ = ["SERVER_RECORDS", "decode_server_record", "incarnation_from_name"]

_line = msgspec.json.Decoder(ServerRecord)
_batch = msgspec.json.Decoder(list[ServerRecord])
_INCARNATION = re.compile(r"records-(\d+)\.jsonl")


def decode_server_record(line: bytes) -> ServerRecord:
    """One records line; raises msgspec errors on a bad line (a missing `request_id` included)."""
    return _line.decode(line)


def incarnation_from_name(name: str) -> int:
    """The supervisor names each incarnation's file `records-<incarnation>.jsonl`; 0 otherwise."""
    match = _INCARNATION.search(name)
    return int(match.group(1)) if match else 0


SERVER_RECORDS = LineFormat("server_records", "records", _line.decode, _batch.decode)
