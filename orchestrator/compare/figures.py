"""Each figure `aqbench compare` reports for one model, with its interval and class; pure, no I/O."""

from __future__ import annotations

import math
from array import array
from collections.abc import Hashable, Mapping, Sequence
from typing import Literal, cast

import msgspec
import numpy as np
from numpy.typing import NDArray

from orchestrator.compare.load import ModelSamples
from orchestrator.compare.noise_floor import NoiseFloor, noise_floor
from orchestrator.compare.schema import ChangedAnswer, Figure, ModelComparison
from orchestrator.config import CompareConfig
from orchestrator.judge.intervals import (
    Change,
    QuantileChange,
    RateChange,
    classify_change,
    clustered_quantile_changes,
    item_ratio_change,
    paired_rate_change,
    quantile_change,
    rate_change,
    tail_share_change,
)
from orchestrator.judge.noninferiority import pair_counts

__all__ = ["compare_model", "QUANTILES", "THROUGHPUT_SLICES", "CDF_POINTS"]

QUANTILES = (0.5, 0.9, 0.99)
THROUGHPUT_SLICES = 20
CDF_POINTS = 200
_SERIES = (("client", "client latency", "client_ms"), ("handler", "server handler", "handler_ms"),
           ("model_call", "server model call", "model_call_ms"))
Series = Literal["client_ms", "handler_ms", "model_call_ms"]
PerItem = Mapping[Hashable, Sequence[float]]  # numpy arrays serve: intervals.py reads them with np.asarray


def compare_model(base: ModelSamples, cand: ModelSamples, *, deterministic: bool,
                  cfg: CompareConfig) -> ModelComparison:
    """Every figure of one model present in both runs. CPU-bound: ~0.1 s for 100,000 requests a side.

    Methods (all from orchestrator/judge/intervals.py; two-sided intervals at [compare] confidence, 90 % by default,
    so each direction errs at most 5 %; a figure is `unchanged` when its interval lies within the tolerance,
    `regressed`/`improved` when wholly beyond it, else `inconclusive`):
    - latency p50/p90/p99 (client request latency, server handler_ms, server model_call_ms), over requests; interval
      of candidate / baseline - 1 against the relative tolerance. When both runs sent the same dataset items (paired):
      items resampled jointly, every request of a drawn item on both sides (cluster bootstrap: the workload mix is
      held equal and the tail stays the requests'); otherwise the exact percentile bootstrap of the order statistic,
      runs resampled independently;
    - paired latency, when both runs sent the same dataset items: the median over items of the per-item ratio of
      median latencies, items as bootstrap units (removes the workload mix); and the tail share, the share of
      candidate requests beyond their item's baseline p90 less the share expected of an unchanged server (sees 40 % of
      items or 15 % of requests gone slow, which medians miss), against [compare] tail_tolerance;
    - throughput: completed requests per slice in 20 equal slices of each run's profiling span, the median slice
      compared as a quantile (bootstrap);
    - error rate, all causes and per cause: Newcombe's hybrid score interval of two independent rates;
    - correctness by path and arm and by path, kind and arm, over items: Tango's paired score interval where the same
      items were scored (Newcombe's otherwise); for a deterministic model any newly wrong item regresses and is named,
      whatever the interval;
    - audio lift (audio minus silence over all items, audio minus transcript over speech items): for a deterministic
      model on the same items the exact difference; otherwise the audio-arm change minus the other arm's change, the
      interval combined from the two (Bonferroni: coverage at least 1 - 2 alpha);
    - completeness: for a deterministic model any item newly incomplete (or with a new defect) regresses and is named;
      items only made complete improve; otherwise the incomplete fraction as a rate (Newcombe).
    """
    base_sent, cand_sent = set(base.items), set(cand.items)
    paired = bool(base_sent) and base_sent == cand_sent and all(item for item, _arm in base_sent)
    figures: list[Figure] = []
    cdfs: dict[str, list[tuple[float, float]]] = {}
    floors: dict[str, NoiseFloor | None] = {}
    for short, label, attr in _SERIES:
        b, c = _finite(getattr(base, attr)), _finite(getattr(cand, attr))
        by_item = (_by_item(base, attr), _by_item(cand, attr)) if paired else None  # type: ignore[arg-type]
        paired_changes = _paired_quantiles(by_item, cfg) if by_item is not None else [None] * len(QUANTILES)
        series = [_quantile_figure(f"latency.{short}.p{round(q * 100)}", f"{label} p{round(q * 100)}", b, c, q, cfg,
                                   paired=pc) for q, pc in zip(QUANTILES, paired_changes, strict=True)]
        if by_item is not None:
            series += [_ratio_figure(short, label, *by_item, cfg), _tail_figure(short, label, *by_item, cfg)]
        floors[short] = floor = noise_floor(base, cand, attr, cfg.confidence)
        figures += [_beyond_floor(f, floor) for f in series]
        if short != "handler":
            cdfs[f"{short}/baseline"], cdfs[f"{short}/candidate"] = _cdf(b), _cdf(c)
    figures.append(_beyond_floor(_throughput_figure(base, cand, cfg), floors["client"]))
    figures += _error_figures(base, cand, cfg)
    figures += _correctness_figures(base, cand, deterministic, cfg)
    figures += _lift_figures(base, cand, deterministic, cfg)
    figures += _completeness_figures(base, cand, deterministic, cfg)
    changed, compared = _changed_answers(base, cand) if deterministic else ([], 0)
    return ModelComparison(model=base.name, deterministic=deterministic, paired=paired,
                           shared_items=len(base_sent & cand_sent), figures=figures, changed_answers=changed,
                           answers_compared=compared, cdfs=cdfs)


def _beyond_floor(f: Figure, floor: NoiseFloor | None) -> Figure:
    """Widen a latency or throughput figure's interval by what drift alone moves two runs apart (in
    quadrature: independent errors); a change within it is `inconclusive`: differs, not attributable."""
    if floor is None or f.lower is None or f.upper is None or f.baseline is None or f.candidate is None:
        return f
    if f.key.endswith(".tail_share"):
        estimate, half = f.candidate - f.baseline, floor.tail
    elif f.key.endswith(".item_ratio"):
        estimate, half = f.candidate - 1.0, floor.level
    elif f.baseline > 0.0:
        estimate, half = f.candidate / f.baseline - 1.0, floor.level
    else:
        return f
    lower = estimate - math.hypot(max(0.0, estimate - f.lower), half)
    upper = estimate + math.hypot(max(0.0, f.upper - estimate), half)
    change = f.change if f.change == "inconclusive" else classify_change(lower, upper, f.tolerance, f.higher_is_worse)
    unit = "pt" if f.key.endswith(".tail_share") else "%"
    note = f"drift between runs: ±{half * 100:.1f} {unit} ({floor.blocks} blocks a run)"
    if change != f.change and f.change in ("regressed", "improved"):
        note = f"differs, not attributable: {f.change} only within the runs' own drift; " + note
    return _replace(f, lower=lower, upper=upper, change=change, note="; ".join(x for x in (f.note, note) if x),
                    method=f.method + " + block noise floor")


def _finite(values: array[float]) -> NDArray[np.float64]:
    array = np.frombuffer(values, dtype=np.float64) if len(values) else np.empty(0)
    return array[np.isfinite(array)]


def _cdf(values: NDArray[np.float64]) -> list[tuple[float, float]]:
    if values.size == 0:
        return []
    fractions = np.linspace(0.0, 1.0, min(CDF_POINTS, values.size))
    return [(float(x), float(f)) for x, f in zip(np.quantile(values, fractions), fractions, strict=True)]


def _missing(key: str, name: str, unit: str, why: str, *, tolerance: float = 0.0, relative: bool = False,
             higher_is_worse: bool = True, **known: float | int | None) -> Figure:
    return Figure(key=key, name=name, unit=unit, baseline=known.get("baseline"),
                  candidate=known.get("candidate"), change="inconclusive", note=why, tolerance=tolerance,
                  relative=relative, higher_is_worse=higher_is_worse,
                  n_baseline=int(known.get("n_baseline") or 0), n_candidate=int(known.get("n_candidate") or 0))


ByItem = tuple[dict[tuple[str, str], NDArray[np.float64]], dict[tuple[str, str], NDArray[np.float64]]]


def _paired_quantiles(by_item: ByItem, cfg: CompareConfig) -> list[QuantileChange | None]:
    """p50, p90, p99 over requests with items resampled jointly; None (unpaired) when no item is shared."""
    try:
        return list(clustered_quantile_changes(cast(PerItem, by_item[0]), cast(PerItem, by_item[1]), QUANTILES,
                                               confidence=cfg.confidence, resamples=cfg.resamples, seed=cfg.seed))
    except ValueError:
        return [None] * len(QUANTILES)


def _quantile_figure(key: str, name: str, b: NDArray[np.float64], c: NDArray[np.float64], q: float,
                     cfg: CompareConfig, *, unit: str = "ms", higher_is_worse: bool = True,
                     tolerance: float | None = None, note: str = "", paired: QuantileChange | None = None) -> Figure:
    tol = cfg.latency_tolerance if tolerance is None else tolerance
    if b.size == 0 or c.size == 0:
        return _missing(key, name, unit, "no samples on " + ("either side" if b.size == c.size else
                        "the baseline" if b.size == 0 else "the candidate"), n_baseline=b.size, n_candidate=c.size,
                        tolerance=tol, relative=True, higher_is_worse=higher_is_worse)
    qc = paired or quantile_change(b, c, q, confidence=cfg.confidence, resamples=cfg.resamples, seed=cfg.seed)
    change: Change
    if qc.relative_lower is None or qc.relative_upper is None:
        change, note = "inconclusive", "the baseline value is not positive: no relative change"
    else:
        change = classify_change(qc.relative_lower, qc.relative_upper, tol, higher_is_worse,
                                 enough_samples=qc.enough_samples)
        if not qc.enough_samples:
            note = note or f"too few samples for p{round(q * 100)}"
    return Figure(key=key, name=name, unit=unit, baseline=qc.baseline, candidate=qc.candidate, change=change,
                  lower=qc.relative_lower, upper=qc.relative_upper, relative=True, tolerance=tol,
                  higher_is_worse=higher_is_worse, confidence=cfg.confidence, n_baseline=qc.n_baseline,
                  n_candidate=qc.n_candidate, method=qc.method, note=note)


def _by_item(m: ModelSamples, attr: Series) -> dict[tuple[str, str], NDArray[np.float64]]:
    values = np.frombuffer(getattr(m, attr), dtype=np.float64) if m.ok else np.empty(0)
    items = np.frombuffer(m.item, dtype=np.int64) if m.ok else np.empty(0, dtype=np.int64)
    keep = np.isfinite(values)
    values, items = values[keep], items[keep]
    order = np.argsort(items, kind="stable")
    values, items = values[order], items[order]
    cuts = np.flatnonzero(np.diff(items)) + 1
    names = m.item_names()
    return {names[int(group[0])]: vals for group, vals in zip(np.split(items, cuts), np.split(values, cuts), strict=True)
            if group.size}


def _ratio_figure(short: str, label: str, b: dict[tuple[str, str], NDArray[np.float64]],
                  c: dict[tuple[str, str], NDArray[np.float64]], cfg: CompareConfig) -> Figure:
    key, name = f"latency.{short}.item_ratio", f"{label}, per item (paired)"
    try:
        rc = item_ratio_change(cast(PerItem, b), cast(PerItem, c), confidence=cfg.confidence, resamples=cfg.resamples, seed=cfg.seed)
    except ValueError as exc:
        return _missing(key, name, "ratio", str(exc), n_baseline=len(b), n_candidate=len(c),
                        tolerance=cfg.latency_tolerance, relative=True)
    change = classify_change(rc.relative_lower, rc.relative_upper, cfg.latency_tolerance,
                             enough_samples=rc.enough_samples)
    return Figure(key=key, name=name, unit="ratio", baseline=1.0, candidate=rc.ratio, change=change,
                  lower=rc.relative_lower, upper=rc.relative_upper, relative=True, tolerance=cfg.latency_tolerance,
                  confidence=cfg.confidence, n_baseline=rc.items, n_candidate=rc.items, method=rc.method,
                  note="" if rc.enough_samples else "too few shared items")


def _tail_figure(short: str, label: str, b: dict[tuple[str, str], NDArray[np.float64]],
                 c: dict[tuple[str, str], NDArray[np.float64]], cfg: CompareConfig) -> Figure:
    key, name = f"latency.{short}.tail_share", f"{label}, share beyond the item's baseline p90 (paired)"
    try:
        rc = tail_share_change(cast(PerItem, b), cast(PerItem, c), confidence=cfg.confidence,
                               resamples=cfg.resamples, seed=cfg.seed)
    except ValueError as exc:
        return _missing(key, name, "fraction", str(exc), n_baseline=len(b), n_candidate=len(c),
                        tolerance=cfg.tail_tolerance)
    return _rate_figure(key, name, rc, cfg.tail_tolerance, cfg, higher_is_worse=True)


def _slice_rates(m: ModelSamples) -> NDArray[np.float64]:
    ends = np.frombuffer(m.end_ns, dtype=np.int64) if m.ok else np.empty(0, dtype=np.int64)
    ends = ends[ends > 0]
    if ends.size < 2 or ends.max() == ends.min():
        return np.empty(0)
    span_s = (int(ends.max()) - int(ends.min())) / 1e9
    counts, _edges = np.histogram(ends, bins=THROUGHPUT_SLICES)
    return counts / (span_s / THROUGHPUT_SLICES)


def _throughput_figure(base: ModelSamples, cand: ModelSamples, cfg: CompareConfig) -> Figure:
    key, name = "throughput", f"throughput (median of {THROUGHPUT_SLICES} slices)"
    b, c = _slice_rates(base), _slice_rates(cand)
    if b.size and c.size and min(np.quantile(b, 0.5, method="inverted_cdf"), np.quantile(c, 0.5, method="inverted_cdf")) == 0.0:
        # Fewer completions than slices: most slices are empty and the median says nothing.
        return _missing(key, name, "req/s", f"too few completions for {THROUGHPUT_SLICES} slices",
                        n_baseline=base.ok, n_candidate=cand.ok, tolerance=cfg.throughput_tolerance, relative=True,
                        higher_is_worse=False)
    return _quantile_figure(key, name, b, c, 0.5, cfg, unit="req/s", higher_is_worse=False,
                            tolerance=cfg.throughput_tolerance)


def _rate_figure(key: str, name: str, rc: RateChange, tolerance: float, cfg: CompareConfig, *,
                 higher_is_worse: bool, unit: str = "fraction") -> Figure:
    change = classify_change(rc.lower, rc.upper, tolerance, higher_is_worse, enough_samples=rc.enough_samples)
    return Figure(key=key, name=name, unit=unit, baseline=rc.baseline, candidate=rc.candidate, change=change,
                  lower=rc.lower, upper=rc.upper, tolerance=tolerance, higher_is_worse=higher_is_worse,
                  confidence=cfg.confidence, n_baseline=rc.n_baseline, n_candidate=rc.n_candidate, method=rc.method,
                  note="" if rc.enough_samples else "too few samples")


def _error_figures(base: ModelSamples, cand: ModelSamples, cfg: CompareConfig) -> list[Figure]:
    if base.issued == 0 or cand.issued == 0:
        return [_missing("errors.all", "error rate, all causes", "fraction", "no profiling requests on one side",
                         n_baseline=base.issued, n_candidate=cand.issued)]
    out = [_rate_figure("errors.all", "error rate, all causes",
                        rate_change(base.issued - base.ok, base.issued, cand.issued - cand.ok, cand.issued,
                                    confidence=cfg.confidence), cfg.error_rate_tolerance, cfg, higher_is_worse=True)]
    for cause in sorted((set(base.causes) | set(cand.causes)) - {"ok"}):
        rc = rate_change(base.causes[cause], base.issued, cand.causes[cause], cand.issued, confidence=cfg.confidence)
        out.append(_rate_figure(f"errors.{cause}", f"error rate, {cause}", rc, cfg.error_rate_tolerance, cfg,
                                higher_is_worse=True))
    return out


def _scored(m: ModelSamples, path: str, arm: str, *, kind: str = "",
            items: set[str] | None = None) -> dict[tuple[str, str], bool]:
    """Right or wrong per scored item of one path and arm (of one kind, among `items`, when given)."""
    return {(k[1], k[2]): right for k, seen in m.answers.items()
            if k[0] == path and k[2] == arm and (not kind or seen.kind == kind)
            and (items is None or k[1] in items) and (right := seen.right) is not None}


def _compare_rates(b: dict[tuple[str, str], bool], c: dict[tuple[str, str], bool], cfg: CompareConfig
                   ) -> tuple[RateChange, list[str], list[str]]:
    """The change of a pass rate (paired over shared items when both scored the same items), with the
    items newly wrong and newly right."""
    shared = sorted(set(b) & set(c))
    newly_wrong = [f"{i}/{a}" for i, a in shared if b[(i, a)] and not c[(i, a)]]
    newly_right = [f"{i}/{a}" for i, a in shared if c[(i, a)] and not b[(i, a)]]
    if shared and set(b) == set(c):
        rc = paired_rate_change(pair_counts([b[k] for k in shared], [c[k] for k in shared]), confidence=cfg.confidence)
    else:
        rc = rate_change(sum(b.values()), len(b), sum(c.values()), len(c), confidence=cfg.confidence)
    return rc, newly_wrong, newly_right


def _deterministic_class(newly_wrong: list[str], newly_right: list[str],
                         b: dict[tuple[str, str], bool], c: dict[tuple[str, str], bool]) -> Change:
    if newly_wrong:
        return "regressed"
    if set(b) != set(c):
        return "inconclusive"  # different items scored: an exact per-item verdict is not possible
    return "improved" if newly_right else "unchanged"


def _correctness_figures(base: ModelSamples, cand: ModelSamples, deterministic: bool,
                         cfg: CompareConfig) -> list[Figure]:
    out: list[Figure] = []
    groups: set[tuple[str, str, str]] = set()
    for m in (base, cand):
        for (path, _item, arm), seen in m.answers.items():
            if seen.verdicts:
                groups.add((path, arm, ""))
                groups.add((path, arm, seen.kind))
    for path, arm, kind in sorted(groups):
        b, c = _scored(base, path, arm, kind=kind), _scored(cand, path, arm, kind=kind)
        key = f"correctness.{path}.{arm}" + (f".{kind}" if kind else "")
        name = f"pass rate, {path}, {arm}" + (f", {kind}" if kind else "")
        if not b or not c:
            out.append(_missing(key, name, "fraction", "scored on one side only", n_baseline=len(b), n_candidate=len(c)))
            continue
        rc, newly_wrong, newly_right = _compare_rates(b, c, cfg)
        figure = _rate_figure(key, name, rc, cfg.correctness_tolerance, cfg, higher_is_worse=False)
        if deterministic:
            change = _deterministic_class(newly_wrong, newly_right, b, c)
            note = (f"newly wrong: {len(newly_wrong)}" if newly_wrong else "") + (
                f"{'; ' if newly_wrong else ''}newly right: {len(newly_right)}" if newly_right else "")
            figure = _replace(figure, change=change, tolerance=0.0, items=newly_wrong, note=note,
                              method=f"{rc.method}; deterministic: any newly wrong item regresses")
        out.append(figure)
    return out


def _lift_figures(base: ModelSamples, cand: ModelSamples, deterministic: bool, cfg: CompareConfig) -> list[Figure]:
    out: list[Figure] = []
    paths = sorted({k[0] for m in (base, cand) for k, s in m.answers.items() if s.verdicts})
    for path in paths:
        for other, label in (("silence", "vs silence"), ("transcript", "vs transcript (speech items)")):
            speech = None
            if other == "transcript":
                speech = {i for i, _a in _scored(base, path, "transcript")} & {i for i, _a in _scored(cand, path, "transcript")}
            sides = [_scored(m, path, arm, items=speech) for m in (base, cand) for arm in ("audio", other)]
            if not all(sides):
                continue
            b_audio, b_other, c_audio, c_other = sides
            lift_b = _rate(b_audio) - _rate(b_other)
            lift_c = _rate(c_audio) - _rate(c_other)
            key, name = f"audio_lift.{path}.{other}", f"audio lift {label}, {path}"
            same = set(b_audio) == set(c_audio) and set(b_other) == set(c_other)
            if deterministic and same:
                d = lift_c - lift_b
                out.append(Figure(key=key, name=name, unit="fraction", baseline=lift_b, candidate=lift_c,
                                  change=classify_change(d, d, 0.0, higher_is_worse=False), lower=d, upper=d,
                                  higher_is_worse=False, confidence=cfg.confidence, n_baseline=len(b_audio),
                                  n_candidate=len(c_audio), method="exact (deterministic, same items)"))
                continue
            audio, _w, _r = _compare_rates(b_audio, c_audio, cfg)
            rest, _w, _r = _compare_rates(b_other, c_other, cfg)
            lower, upper = audio.lower - rest.upper, audio.upper - rest.lower
            enough = audio.enough_samples and rest.enough_samples
            out.append(Figure(key=key, name=name, unit="fraction", baseline=lift_b, candidate=lift_c,
                              change=classify_change(lower, upper, cfg.correctness_tolerance, higher_is_worse=False,
                                                     enough_samples=enough),
                              lower=lower, upper=upper, tolerance=cfg.correctness_tolerance, higher_is_worse=False,
                              confidence=cfg.confidence, n_baseline=len(b_audio), n_candidate=len(c_audio),
                              method=f"{audio.method} per arm, combined (Bonferroni)",
                              note="" if enough else "too few samples"))
    return out


def _rate(scored: dict[tuple[str, str], bool]) -> float:
    return sum(scored.values()) / len(scored)


def _completeness_figures(base: ModelSamples, cand: ModelSamples, deterministic: bool,
                          cfg: CompareConfig) -> list[Figure]:
    out: list[Figure] = []

    def answered(m: ModelSamples, path: str) -> dict[tuple[str, str], tuple[str, ...]]:
        return {(k[1], k[2]): s.defects for k, s in m.answers.items() if k[0] == path and s.first is not None}

    paths = sorted({k[0] for k in base.answers} & {k[0] for k in cand.answers})
    for path in paths:
        b, c = answered(base, path), answered(cand, path)
        if not b or not c:
            continue
        key, name = f"completeness.{path}", f"incomplete answers, {path}"
        rc = rate_change(sum(bool(d) for d in b.values()), len(b), sum(bool(d) for d in c.values()), len(c),
                         confidence=cfg.confidence)
        if not deterministic:
            out.append(_rate_figure(key, name, rc, cfg.correctness_tolerance, cfg, higher_is_worse=True))
            continue
        shared = sorted(set(b) & set(c))
        # Worse: a defect the baseline did not have. Better: defects only lost (incomplete -> complete).
        worse = [k for k in shared if set(c[k]) - set(b[k])]
        better = [k for k in shared if k not in worse and set(b[k]) - set(c[k])]
        changed = [f"{i}/{a}: {','.join(b[(i, a)]) or 'complete'} -> {','.join(c[(i, a)]) or 'complete'}"
                   for i, a in worse + better]
        change: Change = ("regressed" if worse else "improved" if better else
                          "unchanged" if shared else "inconclusive")
        out.append(Figure(key=key, name=name, unit="fraction", baseline=rc.baseline, candidate=rc.candidate,
                          change=change, lower=rc.lower, upper=rc.upper, tolerance=0.0, confidence=cfg.confidence,
                          n_baseline=len(b), n_candidate=len(c), items=changed,
                          method="deterministic: an item newly incomplete (or with a new defect) regresses; "
                                 "one made complete improves",
                          note=f"completeness worse on {len(worse)}, better on {len(better)} of {len(shared)} "
                               f"shared items"))
    return out


def _changed_answers(base: ModelSamples, cand: ModelSamples) -> tuple[list[ChangedAnswer], int]:
    """Items answered differently (or not always the same within a run) on a path both runs took."""
    out: list[ChangedAnswer] = []
    compared = 0
    for key in sorted(set(base.answers) & set(cand.answers)):
        b, c = base.answers[key], cand.answers[key]
        if b.first is None or c.first is None:
            continue
        compared += 1
        if b.first != c.first or c.varied:
            out.append(ChangedAnswer(path=key[0], item_id=key[1], arm=key[2], baseline=b.first, candidate=c.first,
                                     baseline_verdict=b.verdict, candidate_verdict=c.verdict, varied=c.varied))
    return out, compared


def _replace(figure: Figure, **changes: object) -> Figure:
    return msgspec.structs.replace(figure, **changes)
