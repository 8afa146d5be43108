"""The building blocks of every bench.toml table: bounded scalar types and the Section base."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

__all__ = ["ARMS", "PLACEHOLDERS", "Section", "PositiveInt", "NonNegInt", "PositiveFloat", "NonNegFloat",
           "Fraction", "Port", "Arm", "Name", "RunName"]

ARMS = ("audio", "silence", "transcript")
PLACEHOLDERS = ("python", "host", "port", "records", "bundle", "model", "replicas", "run_dir")

PositiveInt = Annotated[int, Meta(ge=1)]
NonNegInt = Annotated[int, Meta(ge=0)]
PositiveFloat = Annotated[float, Meta(gt=0)]
NonNegFloat = Annotated[float, Meta(ge=0)]
Fraction = Annotated[float, Meta(ge=0, le=1)]
Port = Annotated[int, Meta(ge=1, le=65535)]
Arm = Literal["audio", "silence", "transcript"]
Name = Annotated[str, Meta(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")]
RunName = Annotated[str, Meta(pattern=r"^([A-Za-z0-9][A-Za-z0-9._:/-]*)?$")]  # "" = the command's name



class Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A bench.toml table; the string under each field is its meaning (`aqbench config reference` renders it)."""

