"""[models.correctness] and [models.reference]: the family's gates and what a model is compared against."""

from __future__ import annotations

from typing import Literal

from orchestrator.config.common import Arm, Fraction, NonNegFloat, PositiveFloat, PositiveInt, Section

__all__ = ["NoninferiorityGate", "NoninferiorityCriteria", "CorrectnessCriteria", "BaselineSide"]


class NoninferiorityGate(Section, frozen=True, kw_only=True):
    """A margin as the owners write one (`gate`, `quantized_gate`, `sampled_gate` in TRTMC's tasks.yaml)."""

    margin: NonNegFloat = 0.0
    """The margin in points of the benchmark's score."""
    relative_margin: NonNegFloat = 0.0
    """The margin as a fraction of the reference score; the larger of the two margins applies."""


class NoninferiorityCriteria(Section, frozen=True, kw_only=True):
    """[models.correctness.noninferiority]: paired non-inferiority of the model against [models.reference].

    `margin`/`relative_margin` is the gate; `quantized_gate` replaces it for a quantized candidate and
    `sampled_gate` (first) for a sampling one, as the owners choose. With `source` (a TRTMC checkout,
    at `revision` when set) the gates come from its apps/aiperf_qual files instead, for `benchmark`.
    """

    margin: NonNegFloat = 0.0
    """Points: pass when the one-sided 95% upper bound of R (reference score minus model's) is below it."""
    relative_margin: NonNegFloat = 0.0
    """The margin as a fraction of the reference score; the larger of the two margins applies."""
    min_native: NonNegFloat | None = None
    """Below this reference score (points) the benchmark does not discriminate: the outcome is not comparable."""
    quantized_gate: NoninferiorityGate | None = None
    """The gate for a quantized `precision` (int8, fp8, ...) instead of `margin`."""
    sampled_gate: NoninferiorityGate | None = None
    """The gate for a sampling model (`deterministic = false`), before `quantized_gate`."""
    arms: list[Arm] = []
    """The arms whose (item, arm) problems are paired; empty: every arm of `[dataset] arms`."""
    source: str = ""
    """A TRTMC checkout whose apps/aiperf_qual files give the gates (set no margins), as `qualify --trtmc`."""
    revision: str = ""
    """The git revision to read `source` at; empty: its working tree."""
    benchmark: str = ""
    """The Task benchmark in the owners' files that this workload is; empty: the dataset's name."""
    seeds: PositiveInt = 3
    """Answers per problem and side when the model samples (the owners take three seeds)."""


class CorrectnessCriteria(Section, frozen=True, kw_only=True):
    """[models.correctness]: the family's own gates, applied unchanged.

    `min_pass_rate` is the absolute gate (correctness stage, under load, soak windows); `noninferiority`
    judges the model against `[models.reference]`. At least one of them is set.
    """

    scorer: Literal["dataset", "exact", "choice", "numeric"] = "dataset"
    """`dataset`: each item by its manifest rule; `exact`, `choice` or `numeric`: every item by that rule."""
    min_pass_rate: Fraction | None = None
    """The share of correct answers on `arm` the model needs, compared exactly (0.9 is nine tenths)."""
    min_pass_rate_by_kind: dict[str, Fraction] = {}
    """The same per item kind (`{ count = 1.0 }`), on `arm`; needs `min_pass_rate` beside it."""
    arm: Arm = "audio"
    """The arm the pass-rate gates are applied on."""
    deterministic: bool = True
    """`true`: answers under load must equal the correctness stage's; `false`: the model samples (non-inferiority
    asks `seeds` times, `compare` judges correctness by `correctness_tolerance`)."""
    noninferiority: NoninferiorityCriteria | None = None


class BaselineSide(Section, frozen=True, kw_only=True):
    """[models.reference]: the model a non-inferiority gate compares against, run alone after the model's own
    server has stopped. Set exactly one of `argv` and `native_argv`."""

    argv: list[str] = []
    """The reference's own server (placeholders as `[server] argv`; one replica per request in flight)."""
    native_argv: list[str] = []
    """Or a long-lived worker speaking TRTMC's JSON-lines worker protocol with an `audio` field."""
    precision: str = ""
    """What the reference computes at (for the result row)."""
    request_timeout_s: PositiveFloat | None = None
    """One reference request's limit; unset: `[workload] request_timeout_s` (full precision may be slower)."""
    concurrency: PositiveInt = 1
    """Requests in flight at once on its own server, started with as many replicas (the answers do not change)."""
