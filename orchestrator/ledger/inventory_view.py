"""The fields of an `aqbench inventory --json` file that the ledger needs, read defensively.
Our own small view Structs: unknown fields are ignored and every field has a default, so a newer or older
inventory (renamed `class`, added tiers, owner status) still reads. Imports only errors."""

from __future__ import annotations

from pathlib import Path

import msgspec

from orchestrator.base.errors import UsageError

__all__ = ["BlockerView", "EvidenceView", "InventoryView", "RouteView", "RowView", "VariantView", "load_inventory"]


class EvidenceView(msgspec.Struct, frozen=True, kw_only=True):
    """A claim with the file and field that back it."""

    claim: str = ""
    file: str = ""
    field: str = ""
    value: object = None


class BlockerView(msgspec.Struct, frozen=True, kw_only=True):
    """What blocks qualifying an audio-QA checkpoint: route, gate, quality or config, in a sentence."""

    kind: str = ""
    text: str = ""


class RouteView(msgspec.Struct, frozen=True, kw_only=True):
    """What the checkpoint's route supports, as the inventory read it from the family's files."""

    precision: str = ""
    tensor_parallel: int | None = None
    batch: int | None = None
    modes: list[str] = []
    paired_media: str = ""

    def text(self) -> str:
        tp = self.tensor_parallel if self.tensor_parallel is not None else "?"
        batch = self.batch if self.batch is not None else "?"
        paired = f"; paired media {self.paired_media}" if self.paired_media else ""
        return ", ".join([self.precision or "precision ?", f"TP {tp}", f"batch {batch}", *self.modes]) + paired


class RowView(msgspec.Struct, frozen=True, kw_only=True):
    """One checkpoint row. `class_` reads a `class` key where an inventory names it so."""

    checkpoint: str = ""
    revision: str = ""
    family: str = ""
    profile: str = ""
    capability_class: str = ""
    class_: str = msgspec.field(name="class", default="")
    status: str = ""
    gap: str = ""
    gaps: list[object] = []
    evidence: list[EvidenceView] = []
    variants: list[object] = []
    profiles: list[object] = []
    candidate: str = ""
    in_audio_group: bool = True
    full_model_coverage: bool = True
    tier: str = ""
    configured_as: list[str] = []
    accounted: bool = True
    blockers: list[BlockerView] = []
    route: RouteView | None = None

    @property
    def klass(self) -> str:
        return self.class_ or self.capability_class

    @property
    def gap_text(self) -> str:
        return self.gap or "; ".join(str(g.get("gap", g) if isinstance(g, dict) else g) for g in self.gaps)

    @property
    def in_scope(self) -> bool:
        """In the group the owners must close: an audio-conditioned checkpoint or a named candidate."""
        return self.in_audio_group or bool(self.candidate)


class VariantView(msgspec.Struct, frozen=True, kw_only=True):
    """Another profile of a checkpoint: never a model of its own."""

    checkpoint: str = ""
    revision: str = ""
    profile: str = ""
    kinds: list[str] = []
    precision: str = ""
    normal_profile: str = ""
    differing_axis: str = ""
    tier: str = ""
    file: str = ""

    @property
    def partial(self) -> bool:
        """An L0, partial, random or smoke profile: qualifying it says nothing about the full model."""
        return (bool({"partial", "l0-ci-tier"} & set(self.kinds)) or self.tier.upper() == "L0"
                or "l0" in self.profile.lower().split("-"))


class SourceView(msgspec.Struct, frozen=True, kw_only=True):
    root: str = ""
    rev: str = ""
    commit: str = ""


class InventoryView(msgspec.Struct, frozen=True, kw_only=True):
    """The inventory as the ledger reads it; `path` is where it was read from."""

    schema_version: int = 0
    source: SourceView = SourceView()
    revision: str = ""
    rows: list[RowView] = []
    variants: list[VariantView] = []
    unaccounted: list[str] = []
    errors: list[object] = []
    path: str = ""

    @property
    def trtmc_commit(self) -> str:
        return self.source.commit or self.revision


def load_inventory(path: str | Path) -> InventoryView:
    """Read an inventory JSON file. Blocks (file read). Raises UsageError naming the file and what is wrong."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise UsageError(f"{p}: cannot read the inventory ({exc.strerror}); write one with "
                         "`aqbench inventory --trtmc PATH --json INV.json`") from None
    try:
        inv = msgspec.json.decode(raw, type=InventoryView)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise UsageError(f"{p}: not an inventory JSON file ({exc}); expected the output of "
                         "`aqbench inventory --json`") from None
    if not inv.rows and not inv.errors:
        raise UsageError(f"{p}: the inventory has no checkpoint rows; expected the output of `aqbench inventory --json`")
    if any(not r.checkpoint for r in inv.rows):
        raise UsageError(f"{p}: a row has no checkpoint; expected the output of `aqbench inventory --json`")
    variants = inv.variants or _row_variants(inv.rows)
    return msgspec.structs.replace(inv, path=str(p), variants=variants)


def _row_variants(rows: list[RowView]) -> list[VariantView]:
    """Variants carried inside rows (`variants`/`profiles` as objects) where no top-level list exists."""
    out: list[VariantView] = []
    for row in rows:
        for entry in [*row.variants, *row.profiles]:
            if isinstance(entry, dict) and entry.get("profile", entry.get("name")) not in (None, row.profile):
                entry = {"checkpoint": row.checkpoint, "profile": entry.get("profile", entry.get("name")), **entry}
                try:
                    out.append(msgspec.convert(entry, VariantView))
                except msgspec.ValidationError:
                    continue
    return out
