"""Loopback port checks made before a server starts: is it bound, by whom; pick a free one."""

from __future__ import annotations

import errno
import socket

import psutil

from orchestrator.base.errors import ServerError

__all__ = ["check_port_free", "pick_free_port", "port_holder"]


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def port_holder(port: int) -> str:
    """'pid 123 (python3 -m x)' for the process listening on `port`, or '' when it cannot be known."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):
        return ""
    for conn in conns:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            try:
                cmd = " ".join(psutil.Process(conn.pid).cmdline())[:160]
            except psutil.Error:
                cmd = ""
            return f"pid {conn.pid}" + (f" ({cmd})" if cmd else "")
    return ""


def check_port_free(host: str, port: int) -> None:
    """Raise ServerError when `host:port` cannot be bound, naming the holder where it can be known."""
    sock = socket.socket(_family(host), socket.SOCK_STREAM)
    try:
        # Same option servers use, so a port in TIME_WAIT after a restart is not mistaken for taken.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise ServerError(f"cannot bind {host}:{port} to check it is free: {exc.strerror}") from None
        holder = port_holder(port)
        raise ServerError(
            f"port {port} on {host} is already in use"
            + (f" by {holder}" if holder else " (holder unknown: not visible to this user)")
            + "; stop that process or set server.port to a free port (or omit it to pick one)"
        ) from None
    finally:
        sock.close()


def pick_free_port(host: str) -> int:
    """Ask the kernel for a free port on `host` (free now; the server binds it moments later)."""
    with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
