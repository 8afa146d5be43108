"""structlog configuration, done once: console or JSON on stderr, JSON lines to the run's aqbench.log.

Logs narrate; facts are events. Never compute a result from a log line.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import structlog

from orchestrator.publish.secrets import Redactor

__all__ = ["configure_logging", "attach_run_log", "detach_run_log", "get_logger"]

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_encoder = msgspec.json.Encoder()
_run_log: BinaryIO | None = None
_stderr_renderer: Any = None
_stderr_level = logging.INFO
_redactor = Redactor.from_environ()
_json_renderer = structlog.processors.JSONRenderer(serializer=lambda obj, **_: _encoder.encode(obj).decode())


def _redact(logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> Mapping[str, Any]:
    """Credentials never reach stderr or aqbench.log: secret-named keys, secret flags in argv lists,
    Authorization headers and this process's secret environment values are redacted."""
    clean = _redactor.data(event_dict)
    return clean if isinstance(clean, dict) else event_dict


def _tee(logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """Write every entry as a JSON line to the run log (if one is attached), then render for stderr
    when it is at or above the stderr level."""
    if _run_log is not None:
        _run_log.write(_encoder.encode(event_dict) + b"\n")
        _run_log.flush()
    if _LEVELS.get(event_dict.get("level", "info"), logging.INFO) < _stderr_level:
        raise structlog.DropEvent
    return _stderr_renderer(logger, method, event_dict)


def configure_logging(*, fmt: str | None = None, level: str = "info") -> None:
    """Configure structlog for this process. `fmt` None: console on a terminal, JSON otherwise.

    `level` is what stderr shows; the run's aqbench.log keeps info and above whatever it is, so a
    quiet console (`--log-level warning`) never thins the log that `aqbench ingest` reads later."""
    global _stderr_renderer, _stderr_level, _redactor
    _redactor = Redactor.from_environ()
    _stderr_level = _LEVELS.get(level, logging.INFO)
    if fmt is None:
        fmt = "console" if sys.stderr.isatty() else "json"
    _stderr_renderer = (
        structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()) if fmt == "console" else _json_renderer
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redact,
            _tee,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(min(_stderr_level, logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )


def attach_run_log(path: Path) -> None:
    """Also write every log entry as JSON to `path` (the run's aqbench.log) until detached."""
    global _run_log
    detach_run_log()
    if _stderr_renderer is None:
        configure_logging()
    path.parent.mkdir(parents=True, exist_ok=True)
    _run_log = path.open("ab")


def detach_run_log() -> None:
    global _run_log
    if _run_log is not None:
        _run_log.close()
        _run_log = None


def get_logger(name: str = "aqbench") -> Any:
    return structlog.get_logger(name)
