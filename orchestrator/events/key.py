"""The run key: what a result row depends on, as digests and versions. A row counts (for the ledger, for a
campaign's resume) only under the key its inputs have now; orchestrator/runkey/digests.py computes and compares it."""

from __future__ import annotations

import msgspec

__all__ = ["RunKey"]


class RunKey(msgspec.Struct, frozen=True, kw_only=True):
    """Digests of the model's resolved configuration and server command, the dataset identity, the bundle's
    sha256, and the aqbench and AIPerf versions; `digest` covers them all (equal digests = same inputs)."""

    config_sha256: str = ""
    dataset_identity: str = ""
    bundle_sha256: str = ""
    server_argv_sha256: str = ""
    aqbench_version: str = ""
    aqbench_commit: str = ""
    aiperf_version: str = ""
    digest: str = ""
