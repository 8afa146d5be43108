"""What each phase reports beside its outcome (PhaseStarted/PhaseFinished.detail): one frozen Struct per
phase, tagged by `kind`, passed as a value. A phase that reports nothing has no detail (None)."""

from __future__ import annotations

from typing import TypeAlias

import msgspec

from orchestrator.base.identity import ModelIdentity
from orchestrator.events.ab import AbPhase
from orchestrator.events.payloads import (
    AiperfSettings,
    AnswerMismatch,
    CompletenessChange,
    IncompleteAnswer,
    ItemRef,
)
from orchestrator.events.sweep import SweepPhase
from orchestrator.events.values import SoakLimits, StopPlan, TrendPlan

__all__ = ["PhaseDetail", "PHASE_DETAILS", "DatasetPhase", "ModelPhase", "ServerPhase", "CapabilityPhase",
           "CorrectnessPhase", "IdentityPhase", "AiperfPhase", "AiperfRunPhase", "ReferencePhase",
           "NoninferiorityPhase", "SoakPhase"]


class _Phase(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="kind"):
    """Base of every phase detail (not itself a member of the union)."""


class DatasetPhase(_Phase, frozen=True, kw_only=True, tag="dataset"):
    """`dataset`: the dataset a run used (its content hash is `identity`)."""

    name: str = ""
    identity: str = ""
    path: str = ""
    items: int | None = None
    arms: list[str] = []


class ModelPhase(ModelIdentity, frozen=True, kw_only=True, omit_defaults=True, tag_field="kind", tag="model"):
    """`model` (started): the checkpoint's identity as bench.toml states it, and its bundle."""

    bundle: str = ""


class ServerPhase(_Phase, frozen=True, kw_only=True, tag="server"):
    """`server` (finished): the argv of its first incarnation, where it listens, the bundle's hash."""

    argv: list[str] = []
    base_url: str = ""
    bundle_sha256: str = ""


class CapabilityPhase(_Phase, frozen=True, kw_only=True, tag="capability"):
    """`capability` (finished): how many probe answers were checked for completeness."""

    answers_checked: int | None = None


class CorrectnessPhase(_Phase, frozen=True, kw_only=True, tag="correctness"):
    """`correctness`: the requests it asks (started); the failing items and incomplete answers (finished)."""

    requests: int | None = None
    native: bool | None = None
    failing_items: list[str | ItemRef] = []
    incomplete: list[IncompleteAnswer] = []


class IdentityPhase(_Phase, frozen=True, kw_only=True, tag="identity"):
    """`identity` (finished): native and HTTP answers compared, and those that differ."""

    compared: int | None = None
    mismatches: list[AnswerMismatch] = []


class AiperfPhase(_Phase, frozen=True, kw_only=True, tag="aiperf"):
    """qualify's `aiperf`: the workload, and (finished) what differed under load from the correctness stage."""

    settings: AiperfSettings | None = None
    identity_mismatches: list[AnswerMismatch] = []
    incomplete: list[IncompleteAnswer] = []
    completeness_changes: list[CompletenessChange] = []


class AiperfRunPhase(_Phase, frozen=True, kw_only=True, tag="aiperf_run"):
    """run-aiperf's `aiperf`: the arms, input rows and window (started); AIPerf's classification and the
    accounting (finished)."""

    arms: list[str] = []
    rows: int | None = None
    window: str = ""
    classification: str = ""
    balanced: bool | None = None


class ReferencePhase(_Phase, frozen=True, kw_only=True, tag="reference"):
    """`reference`: the reference side's command, precision and requests (started); answers checked (finished)."""

    argv: list[str] = []
    precision: str = ""
    requests: int | None = None
    answers_checked: int | None = None


class NoninferiorityPhase(_Phase, frozen=True, kw_only=True, tag="noninferiority"):
    """`noninferiority`: the arms whose problems are paired."""

    arms: list[str] = []


class SoakPhase(_Phase, frozen=True, kw_only=True, tag="soak"):
    """`soak`: the soak's settings and limits (started); the windows it closed (finished)."""

    duration_s: float | None = None
    window_s: float | None = None
    checkpoint_every_s: float | None = None
    request_rate: float | None = None
    concurrency: int | None = None
    warmup_requests: int | None = None
    arms: list[str] = []
    limits: SoakLimits | None = None
    windows: int | None = None
    # What each memory verdict can decide under this plan (said before the load starts).
    plan: list[TrendPlan] = []
    # Whether a decisive FAIL ends the soak early, and when each verdict that can may first decide (None in
    # journals written before the soak could stop early: it never did).
    stop_early: bool | None = None
    stop_plan: list[StopPlan] = []


PHASE_DETAILS: tuple[type[msgspec.Struct], ...] = (
    DatasetPhase, ModelPhase, ServerPhase, CapabilityPhase, CorrectnessPhase, IdentityPhase, AiperfPhase,
    AiperfRunPhase, ReferencePhase, NoninferiorityPhase, SoakPhase, AbPhase, SweepPhase)
# A new phase (or a new use's phase) appends its own variant: journals already written keep decoding, so no
# schema version is needed for it. Unset fields are not written.
PhaseDetail: TypeAlias = (DatasetPhase | ModelPhase | ServerPhase | CapabilityPhase | CorrectnessPhase
                          | IdentityPhase | AiperfPhase | AiperfRunPhase | ReferencePhase | NoninferiorityPhase
                          | SoakPhase | AbPhase | SweepPhase)
