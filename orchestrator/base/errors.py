"""The AqbenchError family: one base, subclasses by who must act. Imports nothing from the project."""

from __future__ import annotations

__all__ = [
    "AqbenchError",
    "ConfigError",
    "ServerError",
    "ClientError",
    "JournalError",
    "DatasetError",
    "InventoryError",
    "UsageError",
]


class AqbenchError(Exception):
    """Base of every error aqbench raises on purpose; the message says what, where and what next."""

    exit_code: int = 3


class ConfigError(AqbenchError):
    """bench.toml (or a CLI value standing for one of its keys) is wrong: the user must edit it."""

    exit_code = 2


class UsageError(AqbenchError):
    """A command line that cannot be run as given."""

    exit_code = 2


class ServerError(AqbenchError):
    """The server under test could not be started, probed or stopped as required."""


class ClientError(AqbenchError):
    """The load client (AIPerf) is missing, the wrong version, or its run could not be judged."""


class JournalError(AqbenchError):
    """A run journal cannot be written or replayed (corruption before the last line)."""


class DatasetError(AqbenchError):
    """A dataset folder or manifest is invalid: names the item and the field."""

    exit_code = 2


class InventoryError(AqbenchError):
    """A TRTMC checkout or revision cannot be audited at all."""

    exit_code = 2
