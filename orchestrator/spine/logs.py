"""structlog configuration: console or JSON on stderr as spine.stderr's choice says, JSON lines to the run's
aqbench.log (a logging.FileHandler attached for the run's duration). Logs narrate; facts are events."""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any, TextIO

import msgspec

from orchestrator.spine.redaction import Redactor
from orchestrator.spine.stderr import StderrChoice, choose_stderr, on_choice, say

# structlog imports rich, pygments and attrs for its console renderer's tracebacks (and greenlet for a deprecated
# context) whenever they are installed: 0.06 CPU-s of every run's start (bench/overhead.py). Off a terminal
# nothing shows rich's tracebacks, so there structlog loads without them (a None in sys.modules makes an import
# fail, which structlog allows for) and tracebacks are plain text; the names are freed for any later import.
_WITHOUT = () if sys.stderr.isatty() else tuple(m for m in ("rich", "better_exceptions", "greenlet")
                                                 if m not in sys.modules)
for _name in _WITHOUT:
    sys.modules[_name] = None  # type: ignore[assignment]
try:
    import structlog
    from structlog.contextvars import bind_contextvars, unbind_contextvars
    from structlog.typing import Processor, WrappedLogger
finally:
    for _name in _WITHOUT:
        del sys.modules[_name]

# Every other module logs through this one (bind_contextvars too), so structlog loads only here.
__all__ = ["configure_logging", "attach_run_log", "detach_run_log", "get_logger", "say", "bind_contextvars",
           "unbind_contextvars"]

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_ROOT = "aqbench"  # every logger of ours is a child of this one; the handlers hang here
_encoder = msgspec.json.Encoder()
_redactor = Redactor.from_environ()
_run_handler: logging.Handler | None = None
_stderr_handler: logging.Handler | None = None


def _redact(logger: WrappedLogger, method: str, event_dict: MutableMapping[str, Any]) -> Mapping[str, Any]:
    """Credentials never reach stderr or aqbench.log: secret-named keys, secret flags in argv lists,
    Authorization headers and this process's secret environment values are redacted."""
    clean = _redactor.data(event_dict)
    return clean if isinstance(clean, dict) else event_dict


def _json(**_: Any) -> structlog.processors.JSONRenderer:
    return structlog.processors.JSONRenderer(serializer=lambda obj, **__: _encoder.encode(obj).decode())


def _formatter(renderer: Processor) -> structlog.stdlib.ProcessorFormatter:
    # Records from plain logging (libraries) get the same level and time stamp as ours.
    foreign: list[Any] = [structlog.stdlib.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True)]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=foreign,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )


def configure_logging(*, fmt: str | None = None, level: str | None = None) -> None:
    """Configure logging for this process. `fmt` None: console on a terminal, JSON otherwise.

    `level` is what stderr shows (None: warning on a terminal, where the live view owns the screen, info
    otherwise); the run's aqbench.log keeps info and above whatever it is, so a quiet console never thins
    the log that `aqbench ingest` reads later. The CLI makes the same choice through spine.stderr, which
    this module applies when it loads (so a command that never logs never loads structlog)."""
    choose_stderr(fmt=fmt, level=level)


def _apply(choice: StderrChoice) -> None:
    global _redactor, _stderr_handler
    _redactor = Redactor.from_environ()
    tty = sys.stderr.isatty()
    renderer = structlog.dev.ConsoleRenderer(colors=tty) if choice.fmt == "console" else _json()
    root = logging.getLogger(_ROOT)
    if _stderr_handler is not None:
        root.removeHandler(_stderr_handler)
    # The stream is looked up at each write, so a test's or caller's replaced sys.stderr is honoured.
    _stderr_handler = _StderrHandler()
    _stderr_handler.setLevel(_LEVELS.get(choice.level, logging.INFO))
    _stderr_handler.setFormatter(_formatter(renderer))
    root.addHandler(_stderr_handler)
    root.setLevel(min(_stderr_handler.level, logging.INFO))
    root.propagate = False
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redact,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A StreamHandler on whatever sys.stderr is at the time of the write."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


def attach_run_log(path: Path) -> None:
    """Also write every log entry (info and above, or debug too at --log-level debug) as JSON to `path`,
    the run's aqbench.log, until detached."""
    global _run_handler
    detach_run_log()
    if _stderr_handler is None:
        configure_logging()
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    # Info and above always; debug too when stderr shows debug.
    handler.setLevel(min(_stderr_handler.level if _stderr_handler is not None else logging.INFO, logging.INFO))
    handler.setFormatter(_formatter(_json()))
    logging.getLogger(_ROOT).addHandler(handler)
    _run_handler = handler


def detach_run_log() -> None:
    global _run_handler
    if _run_handler is not None:
        logging.getLogger(_ROOT).removeHandler(_run_handler)
        _run_handler.close()
        _run_handler = None


def get_logger(name: str = _ROOT) -> structlog.stdlib.BoundLogger:
    """A structlog logger under the `aqbench` logging hierarchy (`aqbench.qualify`, ...)."""
    return structlog.stdlib.get_logger(name if name == _ROOT or name.startswith(_ROOT + ".") else f"{_ROOT}.{name}")


# Last: applying a choice made before this module loaded needs everything above.
on_choice(_apply)
