"""Cause codes and outcome categories of one request, and the end-of-window accounting tally.

Pure functions and one tally class; no bus, no clock. The correlator and ingest both use them.
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.events import AccountingChecked, ClientRecord, ServerRecord

__all__ = ["CATEGORIES", "category_of", "cause_of", "never_connected", "WindowTally"]

# Every issued request lands in exactly one category; together they sum to `issued`.
CATEGORIES = ("ok", "http_error", "transport_error", "timeout", "cancelled", "in_flight")
_LISTED = 50  # ids listed per problem kind in an AccountingChecked; counts are always complete
# How a count of what AIPerf issued is named in a problem, by its source.
_EXPECTED_SOURCES = {"aiperf_log": " (its log's sending-complete line)", "phase_manifest": " (phase_manifest.json)"}


# aiohttp's connector errors (AIPerf records the exception's class as `error.type`): no connection was
# ever made, so the request never reached the server, whatever the server was doing at the time.
_CONNECTOR_ERRORS = frozenset({
    "ClientConnectorError", "ClientConnectorDNSError", "ClientConnectorSSLError",
    "ClientConnectorCertificateError", "ConnectionRefusedError",
})
_REFUSED_TEXT = ("connectionrefusederror", "connection refused", "connect call failed", "cannot connect to host")


def never_connected(client: ClientRecord) -> bool:
    """The client could not open a connection (refused, unreachable): the request never reached the server.
    A reset, an early end of stream or a missing answer all happen on a connection that was open."""
    if client.error_type in _CONNECTOR_ERRORS:
        return True
    text = client.error_message.lower()
    return any(t in text for t in _REFUSED_TEXT)


def _is_timeout(client: ClientRecord) -> bool:
    text = f"{client.error_type} {client.error_message}".lower()
    return "timeout" in text or "timed out" in text


def category_of(client: ClientRecord) -> str:
    """The client-side outcome: ok, http_error, transport_error, timeout or cancelled."""
    if client.was_cancelled:
        return "cancelled"
    status = client.status_code
    if status is not None and status >= 400:
        return "http_error"
    if client.error_code is None and not client.error_message and not client.error_type:
        return "ok"
    return "timeout" if _is_timeout(client) else "transport_error"


def cause_of(client: ClientRecord | None, server: ServerRecord | None, *, crashed: bool,
             category: str | None = None) -> str:
    """Stable cause code. `crashed`: the request was sent before an unexpected server exit on a connection
    that was open when the server died (the caller decides; a refused connection is never crashed).
    `category`: `category_of(client)` when the caller has it already (the join computes it once)."""
    if client is None:
        return "unmatched"
    if category is None:
        category = category_of(client)
    if category == "cancelled":
        return "cancelled"
    server_ok = server is not None and 200 <= server.status < 300
    if crashed and not server_ok and category != "ok":
        return "server_crash"
    if category == "ok":
        return "ok" if server is not None else "unmatched"
    if category == "http_error":
        status = client.status_code or 0
        busy = status == 429 or (server is not None and server.error_code == "server_busy")
        if busy:
            return "server_busy"
        return "http_4xx" if status < 500 else "http_5xx"
    return "timeout" if category == "timeout" else "connection"


class WindowTally:
    """Counts of one AIPerf window, per phase; `check()` turns them into AccountingChecked.

    One counter keyed by (phase, category, cause) takes every request (one dict update each, made in
    the join's hot path, Joiner._settle); the per-phase views are derived from it when asked for.
    """

    def __init__(self, window: str) -> None:
        self.window = window
        self.counts: dict[tuple[str, str, str], int] = {}
        self.duplicates: list[str] = []
        self.server_without_client: list[str] = []
        self.client_without_server: list[str] = []
        self.problems: list[str] = []
        # Requests of an earlier window closed on time before they ended, counted here (a soak's carry).
        self.carried = 0
        self._counts = {"duplicates": 0, "server_without_client": 0, "client_ok_without_server": 0}

    @property
    def issued(self) -> dict[str, int]:
        """Requests per phase, phases in first-seen order."""
        out: dict[str, int] = {}
        for (phase, _category, _cause), n in self.counts.items():
            out[phase] = out.get(phase, 0) + n
        return out

    @property
    def by_category(self) -> dict[str, dict[str, int]]:
        """Per phase, every category of CATEGORIES (zeros included)."""
        out: dict[str, dict[str, int]] = {}
        for (phase, category, _cause), n in self.counts.items():
            cats = out.get(phase)
            if cats is None:
                cats = out[phase] = dict.fromkeys(CATEGORIES, 0)
            cats[category] += n
        return out

    @property
    def by_cause(self) -> dict[str, dict[str, int]]:
        """Per phase, the causes seen, in first-seen order."""
        out: dict[str, dict[str, int]] = {}
        for (phase, _category, cause), n in self.counts.items():
            causes = out.setdefault(phase, {})
            causes[cause] = causes.get(cause, 0) + n
        return out

    def _list(self, target: list[str], key: str, request_id: str) -> None:
        self._counts[key] += 1
        if len(target) < _LISTED:
            target.append(request_id)

    def duplicate(self, request_id: str) -> None:
        self._list(self.duplicates, "duplicates", request_id)

    def server_only(self, request_id: str) -> None:
        self._list(self.server_without_client, "server_without_client", request_id)

    def client_only(self, request_id: str, *, ok: bool) -> None:
        # Transport failures never reach the server: listed, but only an answered request is a breach.
        if len(self.client_without_server) < _LISTED:
            self.client_without_server.append(request_id)
        if ok:
            self._counts["client_ok_without_server"] += 1

    def check(self, *, expected: dict[str, int] | None = None, expected_from: dict[str, str] | None = None,
              in_flight_ids: Iterable[str] = ()) -> AccountingChecked:
        """The invariant: per phase issued = sum of categories, in_flight = 0, no duplicate ids, no
        server record without its client record, no answered request without its server record, and
        issued = what AIPerf says it issued (when `expected` is given; `expected_from` names where each
        phase's count comes from: "aiperf_log" or "phase_manifest")."""
        problems = list(self.problems)
        issued, by_category, by_cause = self.issued, self.by_category, self.by_cause
        in_flight = sum(c.get("in_flight", 0) for c in by_category.values())
        for phase, cats in sorted(by_category.items()):
            total = sum(cats.values())
            if total != issued.get(phase, 0):
                problems.append(f"{phase}: categories sum to {total}, issued {issued.get(phase, 0)}")
        if in_flight:
            ids = list(in_flight_ids)[:_LISTED]
            problems.append(f"{in_flight} requests still in flight at window end: {', '.join(ids)}")
        if self._counts["duplicates"]:
            problems.append(f"{self._counts['duplicates']} duplicate request ids")
        if self._counts["server_without_client"]:
            problems.append(f"{self._counts['server_without_client']} server records without a client record")
        if self._counts["client_ok_without_server"]:
            problems.append(f"{self._counts['client_ok_without_server']} answered requests without a server record")
        for phase, want in sorted((expected or {}).items()):
            got = issued.get(phase, 0)
            if got != want:
                source = _EXPECTED_SOURCES.get((expected_from or {}).get(phase, ""), "")
                lost = f": {want - got} request(s) it sent left no record in its export or live tap" \
                    if got < want and source == _EXPECTED_SOURCES["aiperf_log"] else ""
                problems.append(f"{phase}: AIPerf issued {want} requests{source}, {got} were seen and accounted{lost}")
        return AccountingChecked(
            source="correlator", window=self.window, balanced=not problems, issued=issued,
            by_cause=by_cause, in_flight=in_flight,
            duplicates=list(self.duplicates), server_without_client=list(self.server_without_client),
            client_without_server=list(self.client_without_server), problems=problems,
            by_category=by_category, expected=dict(expected or {}), expected_from=dict(expected_from or {}),
            carried=self.carried,
        )
