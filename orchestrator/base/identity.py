"""What a checkpoint is (ModelIdentity), declared once: the configuration's [[models]], the `model` phase, the
result row and the report's row are each a ModelIdentity with more fields. Imports nothing from the project.
"""

from __future__ import annotations

import msgspec

__all__ = ["ModelIdentity"]


class ModelIdentity(msgspec.Struct, frozen=True, kw_only=True):
    """A checkpoint's identity as bench.toml's [[models]] states it."""

    family: str = ""
    """The model family."""
    checkpoint: str = ""
    """The checkpoint's Hugging Face id (the inventory and the ledger join on it)."""
    profile: str = ""
    """TRTMC's profile name (its owners' exceptions file is `config/models/<profile>.yaml`)."""
    revision: str = ""
    """The checkpoint's revision."""
    precision: str = ""
    """What the model computes at (`bf16`, `int8`, ...); a quantized one gets `quantized_gate`."""
    native_task: str = ""
    """Native TRTMC Task (`audio_text_to_text`, ...): an audio-QA Task no route reaches makes it `blocked`."""

    def identity_fields(self) -> dict[str, str]:
        """This identity's fields by name, to build another ModelIdentity: `ResultRow(**model.identity_fields())`."""
        return {f: getattr(self, f) for f in ModelIdentity.__struct_fields__}

    @classmethod
    def first_known(cls, *sources: ModelIdentity | None) -> ModelIdentity:
        """Each field from the first source that states it (a later source fills what an earlier left empty)."""
        values = {f: next((v for s in sources if s is not None and (v := getattr(s, f))), "")
                  for f in cls.__struct_fields__}
        return cls(**values)
