"""The inventory's records: what the audit reads (manifests, sources, bench.toml, probes) and what it
produces (rows, variants, errors, the Inventory). Plain frozen Structs; no logic.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "INVENTORY_SCHEMA_VERSION",
    "CAPABILITY_CLASSES",
    "BLOCKER_GAP_KINDS",
    "STATUSES",
    "LAYOUTS",
    "ManifestDocument",
    "SourceDocument",
    "TreeSource",
    "Evidence",
    "Control",
    "ConfiguredModel",
    "ProbeOutcome",
    "CheckpointRow",
    "VariantRow",
    "ErrorRow",
    "Reconciliation",
    "Inventory",
    "Gap",
    "OwnerStatus",
    "Considered",
    "CodeSources",
    "DeclaredTask",
    "RouteLimits",
    "QualityRecord",
    "OwnerGate",
    "Blocker",
    "ServedRoute",
    "TaskSeen",
    "FamilyNote",
]

# 2: effective precision with its source, variant axes, gaps with citations, owner status, considered list.
# 3: the `families/` layout read whole: declared Tasks, the served route, the owners' gates, recorded quality,
#    route limits and blockers per audio-QA row, gap kinds, Task names seen, family notes; three more classes.
INVENTORY_SCHEMA_VERSION = 3

CapabilityClass = Literal[
    "audio-qa", "spoken-dialogue", "transcription-only", "voice-cloning", "speech-output-only",
    "music-generation", "audio-video-generation", "vision-language", "text-only", "unknown",
]
# Order = strength for this workload (what the model is fed first): a checkpoint's class is the strongest
# over its profiles.
CAPABILITY_CLASSES: tuple[str, ...] = (
    "audio-qa", "spoken-dialogue", "transcription-only", "voice-cloning", "speech-output-only",
    "music-generation", "audio-video-generation", "vision-language", "text-only", "unknown",
)
Status = Literal["unsupported", "blocked", "planned", "implemented", "family-validated", "aiperf-qualified"]
STATUSES: tuple[str, ...] = (
    "unsupported", "blocked", "planned", "implemented", "family-validated", "aiperf-qualified",
)
# A blocker's kind -> the kind of the gap that restates it.
BLOCKER_GAP_KINDS: dict[str, str] = {"route": "no-served-route", "gate": "no-owner-gate",
                                     "quality": "recorded-quality-failure", "config": "not-configured"}
Layout = Literal["tests/e2e/models", "families"]
LAYOUTS: tuple[str, ...] = ("tests/e2e/models", "families")

# ------------------------------------------------------------------------------------------ inputs


class ManifestDocument(msgspec.Struct, frozen=True, kw_only=True):
    """One manifest file as read from the tree: repository-relative `path`, its `layout`, raw bytes."""

    path: str
    layout: Layout
    family_dir: str
    data: bytes


class SourceDocument(msgspec.Struct, frozen=True, kw_only=True):
    """A family's Task-declaration source (support.py, runtime C++, README) as read from the tree."""

    path: str
    family_dir: str
    data: bytes


class TreeSource(msgspec.Struct, frozen=True, kw_only=True):
    """What was audited: the checkout, the revision asked for and the commit it resolved to."""

    root: str
    rev: str = ""
    commit: str = ""
    # True/False for a working folder inside git (uncommitted manifest changes); None when unknown.
    dirty: bool | None = None
    read_via: Literal["folder", "git"] = "folder"
    # A bare repository given without --rev: read through git at its HEAD.
    bare: bool = False


class ConfiguredModel(msgspec.Struct, frozen=True, kw_only=True):
    """One bench.toml [[models]] entry as the audit needs it; `index` locates it in the file."""

    name: str
    checkpoint: str
    profile: str = ""
    revision: str = ""
    index: int = 0
    config_path: str = ""


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """One claim and where it was read: `file` plus `field` (a JSON key path, or a journal line)."""

    claim: str
    file: str
    field: str
    value: Any = None  # the value as the file wrote it (any JSON value): shown, never computed with


class ProbeOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What one `qualify` run established about one checkpoint (see `probes`)."""

    run_dir: str
    run_id: str
    started_ns: int
    model: str
    checkpoint: str
    profile: str = ""
    revision: str = ""
    # A status word from STATUSES, or "failed" (then `failed_stage` names the stage).
    status: str
    failed_stage: str = ""
    reason: str = ""
    evidence: list[Evidence] = []


class CodeSources(msgspec.Struct, frozen=True, kw_only=True):
    """Checkout files outside `families/` that the audit cites: where an omitted `precision` is defaulted
    (harness, build CLI), the older layout's build plugins and runtimes (plan sections built and loaded,
    public entry points), the owners' published support matrix, the served chat schema, the owners'
    qualification Tasks and profile configs, whether the checkout has the family qualification scheme, and
    the Task SDK headers. A file the checkout lacks is None (or an empty list)."""

    precision_defaults: list[SourceDocument] = []
    family_code: list[SourceDocument] = []
    support_matrix: SourceDocument | None = None
    server_schema: SourceDocument | None = None
    owner_tasks: SourceDocument | None = None
    owner_models: list[SourceDocument] = []
    qualification_scheme: SourceDocument | None = None
    task_sdk: list[SourceDocument] = []


# ----------------------------------------------------------------------------------------- outputs


class Control(msgspec.Struct, frozen=True, kw_only=True):
    """A request control the manifests exercise (max new tokens, sampling, language) with values seen."""

    kind: Literal["max_new_tokens", "sampling", "language"]
    field: str
    values: list[Any]  # the manifests' own JSON values for the control, as written
    evidence: list[Evidence]


class VariantRow(msgspec.Struct, frozen=True, kw_only=True):
    """A profile that is not its checkpoint's normal profile; never counted as another model."""

    checkpoint: str
    revision: str
    profile: str
    file: str
    kinds: list[str]
    precision: str = ""
    tensor_parallel: int = 1
    capability_class: str = "unknown"
    normal_profile: str = ""
    # What differs from the normal profile, one phrase per axis ("TP 4 (normal 1)", "precision fp16 (normal
    # fp32)", "L0 CI tier (ci_tier l0_only)"); `kinds` names the same axes as words.
    differs: list[str] = []
    context_parallel: int = 1
    ci_tier: str = ""
    precision_source: Evidence | None = None


class Gap(msgspec.Struct, frozen=True, kw_only=True):
    """One thing that stands in the way of audio QA, in a sentence, with where the checkout shows it."""

    text: str
    # Its first clause, for a one-line table cell.
    summary: str = ""
    evidence: list[Evidence] = []
    # A stable code for what the gap is ("no-served-route", "class:transcription-only", "runtime-takes-no-audio",
    # ...): reconciliation compares kinds, never the text (which may quote commit ids or wording).
    kind: str = ""


class DeclaredTask(msgspec.Struct, frozen=True, kw_only=True):
    """A Task a family's support.py declares, with its line and the condition it is declared under."""

    task: str
    file: str
    line: int
    # The `if` it sits under, with what a bare name in it is ("audio (audio = ...)"); "" when unconditional.
    condition: str = ""


class RouteLimits(msgspec.Struct, frozen=True, kw_only=True):
    """What the family's route supports for a checkpoint, as its README (and build code) state it."""

    precision: str = ""
    tensor_parallel: int | None = None
    batch: int | None = None
    # Execution modes the route runs media in ("standalone"), and what paired builds do with media.
    modes: list[str] = []
    paired_media: str = ""
    evidence: list[Evidence] = []


class QualityRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded result for an audio mode of a checkpoint, from a family README's results table."""

    checkpoint: str
    mode: str
    outcome: Literal["passed", "quality-failure", "failed"]
    file: str
    line: int
    # The README section and table column it was read under.
    section: str = ""
    column: str = ""


class OwnerGate(msgspec.Struct, frozen=True, kw_only=True):
    """Whether the owners have a gate to judge a checkpoint's audio Task by, and what is missing if not."""

    exists: bool
    task: str = ""
    evidence: list[Evidence] = []
    missing: list[str] = []


class Blocker(msgspec.Struct, frozen=True, kw_only=True):
    """One thing that blocks qualifying an audio-QA checkpoint: the route, the owners' gate, recorded quality,
    or (when nothing else does) that bench.toml does not configure it."""

    kind: Literal["route", "gate", "quality", "config"]
    text: str
    evidence: list[Evidence] = []


class ServedRoute(msgspec.Struct, frozen=True, kw_only=True):
    """What the checkout's served chat schema accepts as message content parts."""

    file: str
    present: bool
    # None when the schema could not be read (then `error` says why).
    accepts_audio: bool | None = None
    part_types: list[str] = []
    evidence: list[Evidence] = []
    error: str = ""


class TaskSeen(msgspec.Struct, frozen=True, kw_only=True):
    """An audio Task name found in the checkout and its class; `flagged` when it is not in the Task list."""

    task: str
    capability_class: str
    flagged: bool = False
    evidence: list[Evidence] = []


class FamilyNote(msgspec.Struct, frozen=True, kw_only=True):
    """What the audit read (or could not read) of a family beyond its rows; unaccounted when not `accounted`."""

    family: str
    text: str
    evidence: list[Evidence] = []
    accounted: bool = True


class OwnerStatus(msgspec.Struct, frozen=True, kw_only=True):
    """One row of TRTMC's own published support matrix, cited by file and line."""

    file: str
    line: int
    hf_id: str
    profile: str
    precision: str = ""
    provider: str = ""
    # Platform column -> the owners' word for it ("Green", "Red", "Yellow").
    platforms: dict[str, str] = {}


class Considered(msgspec.Struct, frozen=True, kw_only=True):
    """A checkpoint with audio in its outputs or assets that the audit left out of the group, and why."""

    checkpoint: str
    profile: str
    file: str
    capability_class: str
    reason: str
    evidence: list[Evidence] = []


class CheckpointRow(msgspec.Struct, frozen=True, kw_only=True):
    """One checkpoint of the audio-conditioned group (or a bench.toml candidate), with its evidence."""

    checkpoint: str
    revision: str
    family: str
    profile: str
    file: str
    full_model_coverage: bool
    task_strategy: str
    runtime_strategy: str
    user_contracts: list[str]
    precision: str
    cache_length: int | None
    audio_inputs: list[str]
    capability_class: str
    classes_seen: dict[str, str]
    status: str
    gap: str
    controls: list[Control]
    evidence: list[Evidence]
    variants: list[str]
    candidate: str = ""
    in_audio_group: bool = True
    configured_as: list[str] = []
    probes: list[ProbeOutcome] = []
    accounted: bool = True
    notes: list[str] = []
    # Where the normal profile's precision comes from: its manifest, or TRTMC's default for an omitted one.
    precision_source: Evidence | None = None
    # Findings with citations; `gap` above is their one-sentence summary (or the class's reason).
    gaps: list[Gap] = []
    owner_status: list[OwnerStatus] = []
    # Profiles that are PR-CI (L0) tiers of the normal profile: same checkpoint, shorter budget; never coverage.
    l0_tier_profiles: list[str] = []
    # Audio inputs that are the same clip as one in `audio_inputs` (its provenance), counted once.
    same_clip: list[Evidence] = []
    # The family's support.py Tasks, with lines; for audio-QA rows the route's limits, the owners' recorded
    # quality, the owners' gate, and what blocks qualification.
    declared_tasks: list[DeclaredTask] = []
    route: RouteLimits | None = None
    quality: list[QualityRecord] = []
    owner_gate: OwnerGate | None = None
    blockers: list[Blocker] = []


class ErrorRow(msgspec.Struct, frozen=True, kw_only=True):
    """A manifest that could not be audited: the file and what is wrong with it."""

    file: str
    layout: str
    error: str


class Reconciliation(msgspec.Struct, frozen=True, kw_only=True):
    """The inventory against bench.toml: what is missing on either side, and unmatched probe results."""

    config_path: str = ""
    group_missing_from_config: list[str] = []
    configured_absent_from_checkout: list[str] = []
    configured_outside_group: list[str] = []
    probes_unmatched: list[str] = []


class Inventory(msgspec.Struct, frozen=True, kw_only=True):
    """The whole audit; `accounted` is true when every checkpoint has a known class and status, and nothing the
    audit looked at was unreadable or unclassified (each such thing is a line of `unaccounted`)."""

    schema_version: int = INVENTORY_SCHEMA_VERSION
    source: TreeSource
    layouts_found: list[str]
    manifests_scanned: int
    manifests_in_group: int
    rows: list[CheckpointRow]
    variants: list[VariantRow]
    errors: list[ErrorRow]
    reconciliation: Reconciliation
    accounted: bool
    unaccounted: list[str]
    considered: list[Considered] = []
    # Where TRTMC defaults an omitted manifest precision (None when the checkout does not show it).
    precision_default: Evidence | None = None
    # "families", "tests/e2e/models" or "both", with the files that show it.
    layout: str = ""
    layout_evidence: list[Evidence] = []
    served_route: ServedRoute | None = None
    tasks_seen: list[TaskSeen] = []
    family_notes: list[FamilyNote] = []
