"""Which format a file or a line is in: file-name hints first, then the keys of a decoded line.
Detection decodes one line generically; ingest calls it once per file (on its first non-blank line)
and again only for lines the file's format rejects."""

from __future__ import annotations

import fnmatch

import msgspec

from adapters.logs.aiperf_raw import AIPERF_RAW
from adapters.logs.aiperf_records import AIPERF_RECORDS
from adapters.logs.formats import FormatName, LineFormat
from adapters.logs.journal import JOURNAL
from adapters.logs.otel import LogFields
from adapters.logs.sniff import sniff_fields
from adapters.logs.structured import GENERIC_JSON, STRUCTLOG, UVICORN
from adapters.logs.text import TEXT
from adapters.trtmc.records import decode_server_columns, decode_server_record

__all__ = ["SERVER_RECORDS", "FORMATS", "KNOWN_NAMES", "hint_from_name", "sniff", "sniff_fields", "file_format", "is_known_name"]

SERVER_RECORDS = LineFormat("server_records", "records", decode_server_record, decode_server_columns)

FORMATS: dict[str, LineFormat] = {
    f.name: f for f in (JOURNAL, AIPERF_RECORDS, AIPERF_RAW, SERVER_RECORDS, STRUCTLOG, UVICORN, GENERIC_JSON, TEXT)
}
_COMPRESSED = ("", ".gz", ".zst", ".zstd")
# (glob on the file name without a compression suffix, format it suggests); order matters.
_HINTS: tuple[tuple[str, FormatName | None], ...] = (
    ("events.jsonl", "journal"),
    ("*events*.jsonl", "journal"),
    ("profile_export_raw.jsonl", "aiperf_raw"),
    ("profile_export.jsonl", "aiperf_records"),
    ("*records*.jsonl", "server_records"),
    ("aqbench.log", "structlog"),
    ("*.log", None),
    ("*.log.[0-9]*", None),
)
KNOWN_NAMES = tuple(pattern for pattern, _ in _HINTS)
_decode_any = msgspec.json.Decoder(LogFields)


def _strip_compression(name: str) -> str:
    for suffix in (".gz", ".zst", ".zstd"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def is_known_name(name: str) -> bool:
    """Whether a file found while walking a folder is one ingest reads (logs and record files)."""
    base = _strip_compression(name)
    return any(fnmatch.fnmatchcase(base, pattern) for pattern in KNOWN_NAMES)


def hint_from_name(name: str) -> FormatName | None:
    """The format a file name suggests (`profile_export.jsonl`, `records-2.jsonl`, ...), if any."""
    base = _strip_compression(name)
    for pattern, fmt in _HINTS:
        if fnmatch.fnmatchcase(base, pattern):
            return fmt
    return None


def sniff(line: bytes) -> FormatName | None:
    """The format of one line: "text" when it is not a JSON object, None when it looks like one but
    does not decode (a torn or corrupt line)."""
    stripped = line.strip()
    if not stripped.startswith(b"{"):
        return "text"
    try:
        return sniff_fields(_decode_any.decode(stripped))
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def file_format(name: str, first_line: bytes | None) -> FormatName:
    """A file's format from its name and first non-blank line; the name wins where the line is
    inconclusive (generic JSON or undecodable), the line wins where the name says nothing."""
    hint = hint_from_name(name)
    found = sniff(first_line) if first_line is not None else None
    if found is None or found == "json":
        return hint or found or "text"
    if found == "text" and hint is not None and FORMATS[hint].kind == "records":
        return hint
    return found
