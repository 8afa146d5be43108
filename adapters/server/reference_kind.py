"""The embedded reference server as a ServerKind: trtmc-server's readiness protocol, JSON or text logs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from adapters.server import openai_health
from adapters.server.lines import parse_log_line
from orchestrator.events import Json
from orchestrator.spine.ports import ParsedLine, Readiness

__all__ = ["ReferenceServerKind"]

_ACTIVE = "aqbench_reference_active_requests"


class ReferenceServerKind:
    """`python -m adapters.reference ...`: same health routes as trtmc-server, so the same parsing."""

    name = "reference"
    in_flight_path = "/metrics"

    def render_argv(self, template: Sequence[str], values: Mapping[str, str]) -> list[str]:
        return openai_health.render_argv(template, values, kind=self.name)

    def parse_readiness(self, status: int, body: bytes) -> Readiness:
        return openai_health.parse_readiness(status, body)

    def listed_models(self, body: bytes) -> list[Json]:
        return openai_health.listed_models(body)

    def parse_log_line(self, text: str) -> ParsedLine:
        return parse_log_line(text)

    def parse_in_flight(self, body: bytes) -> int | None:
        """The `aqbench_reference_active_requests` gauge of its Prometheus text (chat requests being handled)."""
        for line in body.decode("utf-8", "replace").splitlines():
            name, _, value = line.partition(" ")
            if name == _ACTIVE:
                try:
                    return int(float(value))
                except ValueError:
                    return None
        return None
