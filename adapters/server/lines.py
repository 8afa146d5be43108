"""Printed server output -> ParsedLine: JSON objects become fields, text lines keep a level when one shows.

Only parsing; reading the pipes and publishing belong to process.py.
"""

from __future__ import annotations

import re

import msgspec

from orchestrator.events import Json
from orchestrator.spine.ports import ParsedLine

__all__ = ["parse_log_line", "LineSplitter", "MAX_LINE_BYTES"]

# A line longer than this is cut (and the cut said) so that a runaway print cannot exhaust memory.
MAX_LINE_BYTES = 64 * 1024

_json = msgspec.json.Decoder(Json)  # a printed line's own JSON object (foreign)
# Uvicorn ("INFO:     ..."), logging ("... ERROR ..."), structlog console ("[info     ]").
_LEVEL_RE = re.compile(
    r"^(?:\S+\s+){0,3}?\[?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b", re.IGNORECASE
)
_LEVEL_KEYS = ("level", "levelname", "severity", "lvl")
_TEXT_KEYS = ("event", "message", "msg")


# Uvicorn's logger before a JSON object: trtmc-server logs its per-request records this way
# ('INFO:     {"event":"http_request","request_id":...}').
_PREFIXED_JSON_RE = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+(\{.*\})$")


def _json_line(stripped: str, prefix_level: str = "") -> ParsedLine | None:
    try:
        fields = _json.decode(stripped)
    except msgspec.DecodeError:
        return None
    level = next((str(fields[k]).lower() for k in _LEVEL_KEYS if k in fields), prefix_level)
    message = next((str(fields[k]) for k in _TEXT_KEYS if k in fields), "")
    return ParsedLine(text=message, fields=fields, level=level)


def parse_log_line(text: str) -> ParsedLine:
    """JSON object lines keep their fields (text = their message), also behind Uvicorn's level prefix;
    others are raw text with a level."""
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        if (parsed := _json_line(stripped)) is not None:
            return parsed
    elif ((prefixed := _PREFIXED_JSON_RE.match(stripped)) is not None
          and (parsed := _json_line(prefixed.group(2), prefixed.group(1).lower())) is not None):
        return parsed
    match = _LEVEL_RE.match(stripped)
    level = match.group(1).lower() if match else ""
    return ParsedLine(text=text, level="warning" if level == "warn" else level)


class LineSplitter:
    """Turns byte chunks into decoded lines; keeps the unfinished tail for the next chunk."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> list[str]:
        self._pending.extend(chunk)
        *complete, rest = self._pending.split(b"\n")
        lines = [_decode(raw) for raw in complete]
        if len(rest) > MAX_LINE_BYTES:
            lines.append(_decode(rest[:MAX_LINE_BYTES]) + f" [cut at {MAX_LINE_BYTES} bytes]")
            rest = bytearray()
        self._pending = bytearray(rest)
        return lines

    def flush(self) -> list[str]:
        """At end-of-file: the last line even without its newline."""
        rest, self._pending = bytes(self._pending), bytearray()
        return [_decode(rest)] if rest else []


def _decode(raw: bytes | bytearray) -> str:
    if len(raw) > MAX_LINE_BYTES:
        return raw[:MAX_LINE_BYTES].decode("utf-8", "replace") + f" [cut at {MAX_LINE_BYTES} bytes]"
    return bytes(raw).rstrip(b"\r").decode("utf-8", "replace")
