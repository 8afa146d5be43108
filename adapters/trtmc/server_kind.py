"""trtmc-server as a ServerKind: argv with its bundle, readiness, and Uvicorn's text log lines.
Facts read from trtmc-server's own front end (TRTMC's `python -m trtmc_server`). Nothing here starts
processes (adapters/server/process.py does)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

from adapters.server import openai_health
from adapters.server.lines import parse_log_line
from orchestrator.base.errors import ConfigError
from orchestrator.events import Json
from orchestrator.spine.ports import ParsedLine, Readiness

__all__ = ["HIDDEN_FLAGS", "INPUT_FILE_FLAGS", "TrtmcServerKind"]

# Flags trtmc-server takes but leaves out of its --help (argparse.SUPPRESS); it needs them to start a worker.
HIDDEN_FLAGS = frozenset({"--worker-binary"})
# Flags whose value must be an existing file: trtmc-server opens it only when a worker starts, minutes in.
INPUT_FILE_FLAGS = frozenset({"--worker-binary"})


class TrtmcServerKind:
    """`trtmc-server BUNDLE --model-name NAME ...`; readiness 200 `{"status":"ready","degraded":bool}`."""

    name = "trtmc-server"
    in_flight_path = ""  # no gauge of requests in flight known to aqbench: the live page keeps the accounting's

    def render_argv(self, template: Sequence[str], values: Mapping[str, str]) -> list[str]:
        argv = openai_health.render_argv(template, values, kind=self.name)
        # trtmc-server requires a loopback IP literal (ipaddress.ip_address(host).is_loopback): "localhost"
        # makes it exit 2 at spawn. Say so before spawning, with the key to fix.
        if "--host" in argv[:-1]:
            host = argv[argv.index("--host") + 1]
            try:
                loopback = ipaddress.ip_address(host).is_loopback
            except ValueError:
                loopback = False
            if not loopback:
                raise ConfigError(f"server.argv: --host {host!r}: trtmc-server takes a loopback IP address only "
                                  f"(127.0.0.1 or ::1, not a host name)")
        return argv

    def parse_readiness(self, status: int, body: bytes) -> Readiness:
        return openai_health.parse_readiness(status, body)

    def listed_models(self, body: bytes) -> list[Json]:
        return openai_health.listed_models(body)

    def parse_log_line(self, text: str) -> ParsedLine:
        # Uvicorn prints "INFO:     Application startup complete."; the generic parser reads that level.
        return parse_log_line(text)

    def parse_in_flight(self, body: bytes) -> int | None:
        return None
