"""The ServerParts of each `server.kind`: the reference server's and trtmc-server's adapters, side by side."""

from __future__ import annotations

from adapters.server.http_probe import PlainHttpProbe
from adapters.server.process import SubprocessLauncher
from adapters.server.reference_kind import ReferenceServerKind
from adapters.server.sampler import PsutilSampler
from adapters.trtmc.server_kind import TrtmcServerKind
from orchestrator.base.errors import ConfigError
from orchestrator.spine.ports import ServerKind, ServerParts

__all__ = ["server_parts", "KINDS"]

KINDS = ("reference", "trtmc-server")


def server_parts(kind: str) -> ServerParts:
    """The real adapters for one `server.kind`; ConfigError listing the valid kinds otherwise."""
    impl: ServerKind
    if kind == "reference":
        impl = ReferenceServerKind()
    elif kind == "trtmc-server":
        impl = TrtmcServerKind()
    else:
        raise ConfigError(f"server.kind: unknown kind {kind!r}; valid: {', '.join(KINDS)}")
    return ServerParts(kind=impl, launcher=SubprocessLauncher(), new_sampler=PsutilSampler, new_probe=PlainHttpProbe)
