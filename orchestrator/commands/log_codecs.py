"""The log and record formats `aqbench ingest` reads, wired behind the LogCodecs port (a composition root).

Apart from wiring.py so that the ingest command loads only the log adapters (bench/ingest.py measures its start).
"""

from __future__ import annotations

from typing import Any

from adapters import logs as _logs
from adapters.tail import LineFollower
from adapters.trtmc.records import incarnation_from_name
from orchestrator.events import Event, LogLine
from orchestrator.spine.ports import LineDecoder, LineFollowing, LogCodecs

__all__ = ["log_codecs"]


class _LogCodecs:
    """adapters.logs (and the records' file naming) behind the LogCodecs port."""

    formats: dict[str, LineDecoder] = dict(_logs.FORMATS)

    def file_format(self, name: str, first_line: bytes | None) -> str:
        return _logs.file_format(name, first_line)

    def sniff(self, line: bytes) -> str | None:
        return _logs.sniff(line)

    def is_known_name(self, name: str) -> bool:
        return _logs.is_known_name(name)

    def incarnation_from_name(self, name: str) -> int:
        return incarnation_from_name(name)

    def is_log(self, item: object) -> bool:
        return isinstance(item, _logs.OtelLog)

    def severity(self, item: Any) -> str:  # noqa: ANN401  # the LogCodecs port's signature
        return str(item.severity_text)

    def to_log_line(self, item: Any, *, stream: str, source: str) -> Event:  # noqa: ANN401  # as severity
        return _logs.to_log_line(item, stream=stream, source=source)

    def severity_of_line(self, line: LogLine) -> str:
        return _logs.from_log_line(line).severity_text

    def follow(self, path: str, *, poll_s: float) -> LineFollowing:
        return LineFollower(path, poll_s=poll_s)


def log_codecs() -> LogCodecs:
    """The formats a real ingest reads."""
    return _LogCodecs()
