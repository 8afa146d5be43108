"""`--serve [HOST:]PORT`: where the live page listens, and the rule that only loopback is served unless
`--serve-public` says otherwise. Pure."""

from __future__ import annotations

import ipaddress

import msgspec

from orchestrator.base.errors import UsageError

__all__ = ["ServeAddress", "parse_serve", "is_loopback"]

DEFAULT_HOST = "127.0.0.1"


class ServeAddress(msgspec.Struct, frozen=True, kw_only=True):
    """The host and port the live page binds (port 0: any free port), whether it may be off loopback, and how
    long it stays up after the run's end."""

    host: str = DEFAULT_HOST
    port: int = 0
    public: bool = False
    linger_s: float = 0.0

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1); False for names and other addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_serve(text: str, *, public: bool = False, flag: str = "--serve", linger_s: float = 0.0) -> ServeAddress:
    """`PORT`, `HOST:PORT` or `[IPv6]:PORT` to a ServeAddress; UsageError naming the flag when it is not one,
    or when the host is not loopback and `public` is False."""
    if text.count(":") > 1 and not text.startswith("["):
        raise UsageError(f"{flag} {text}: write an IPv6 address in brackets, e.g. {flag} [::1]:8090")
    host, _, port_text = text.rpartition(":")
    host = host.strip("[]") or DEFAULT_HOST
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f"{flag} {text}: expected [HOST:]PORT, e.g. {flag} 8090 or {flag} 127.0.0.1:8090") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"{flag} {text}: port {port} is outside 0-65535 (0 picks a free port)")
    address = ServeAddress(host=host, port=port, public=public, linger_s=linger_s)
    if not address.loopback and not public:
        raise UsageError(f"{flag} {text}: {host} is not a loopback address; the page would be reachable from other "
                         f"machines. Add --serve-public to serve it there, or use {flag} {port} (127.0.0.1)")
    return address
