"""One parsed manifest as the audit sees it: the fields it needs, each claim with its evidence."""

from __future__ import annotations

import msgspec

from orchestrator.inventory.records import Control, Evidence, ManifestDocument

__all__ = ["Profile"]


class Profile(msgspec.Struct, kw_only=True):
    """The fields of one parsed manifest the audit needs, each with its evidence."""

    doc: ManifestDocument
    name: str
    hf_id: str
    revision: str
    family: str
    task: str = ""
    runtime: str = ""
    precision: str = ""
    cache_length: int | None = None
    tensor_parallel: int = 1
    context_parallel: int = 1
    # Why this profile is a PR-CI (L0) tier of its checkpoint ("ci_tier l0_only", "name part 'l0'"); "" if not.
    l0_tier: str = ""
    precision_source: Evidence | None = None
    same_clip: list[Evidence] = []
    partial_reasons: list[str] = []
    skips: list[str] = []
    contracts: list[str] = []
    test_types: list[str] = []
    audio_inputs: list[str] = []
    image_inputs: list[str] = []
    has_prompt: bool = False
    controls: list[Control] = []
    evidence: dict[str, list[Evidence]] = {}
    in_group: bool = False
    group_reason: Evidence | None = None
    capability: str = "unknown"
    capability_evidence: list[Evidence] = []
    capability_why: str = ""

    def note(self, claim: str, field: str, value: object) -> Evidence:
        ev = Evidence(claim=claim, file=self.doc.path, field=field, value=value)
        self.evidence.setdefault(claim, []).append(ev)
        return ev
