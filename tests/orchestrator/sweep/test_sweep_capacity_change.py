"""`aqbench compare` of two sweeps: the change in capacity, decided only where the brackets allow it, through
the command itself on journals written to disk."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from orchestrator.cli import main
from orchestrator.events import (
    CapacityEstimate,
    DatasetPhase,
    PhaseFinished,
    PhaseStarted,
    RunFinished,
    RunStarted,
    SweepConcluded,
    SweepPhase,
)

SLO = {"p99_latency_ms": 8000.0, "max_error_rate": 0.05}


def _sweep(tmp_path: Path, name: str, passing: float | None, failing: float | None, *, mode: str = "rate",
           slo: dict[str, float] | None = None, dataset: str = "audioqa-v2@abc",
           fitted: tuple[float, float, float] | None = None) -> Path:
    """A sweep's journal whose capacity is bracketed by [passing, failing) (None: that end open), and fitted
    (value, low, high) where given."""
    outcome = ("bracketed" if passing is not None and failing is not None else "all_passed" if failing is None
               else "none_passed")
    events = [RunStarted(command="sweep", run_id=name, seq=1),
              PhaseFinished(phase="dataset", outcome="passed", seq=2, detail=DatasetPhase(name="audioqa-v2",
                                                                                         identity=dataset)),
              PhaseStarted(phase="sweep", seq=3, detail=SweepPhase(mode=mode, points=[1.0, 2.0, 4.0, 8.0],
                                                                   slo=slo if slo is not None else SLO)),
              SweepConcluded(outcome=outcome, mode=mode, unit="req/s", capacity=passing,  # type: ignore[arg-type]
                             highest_passing=passing, lowest_failing=failing, summary=f"{name}'s capacity", seq=4,
                             estimate=CapacityEstimate(value=fitted[0], low=fitted[1], high=fitted[2])
                             if fitted else None),
              RunFinished(status="ok", seq=5)]
    run = tmp_path / name
    run.mkdir()
    (run / "events.jsonl").write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events))
    return run


def _compare(tmp_path: Path, base: Path, cand: Path, *extra: str) -> tuple[int, dict[str, object]]:
    code = main(["compare", str(base), str(cand), "--out", str(tmp_path / "out"), *extra])
    return code, msgspec.json.decode((tmp_path / "out" / "compare.json").read_bytes())


class TestCapacityChange:
    def test_a_candidate_failing_where_the_baseline_held_regressed(self, tmp_path: Path) -> None:
        """Baseline [4, 8), candidate [2, 4): the candidate broke an SLO at 4, which the baseline held: exit 1."""
        code, out = _compare(tmp_path, _sweep(tmp_path, "a", 4.0, 8.0), _sweep(tmp_path, "b", 2.0, 4.0))
        assert (code, out["change"]) == (1, "regressed")
        assert (out["delta_low"], out["delta_high"]) == (-6.0, 0.0)
        assert "broke an SLO at 4 req/s, a load the baseline held" in str(out["reason"])
        assert "**regressed**" in (tmp_path / "out" / "compare.md").read_text()

    def test_a_candidate_holding_where_the_baseline_broke_improved(self, tmp_path: Path) -> None:
        """Baseline [2, 4), candidate all passed up to 8: capacity rose, exit 0."""
        code, out = _compare(tmp_path, _sweep(tmp_path, "a", 2.0, 4.0), _sweep(tmp_path, "b", 8.0, None))
        assert (code, out["change"]) == (0, "improved")

    def test_overlapping_brackets_are_inconclusive(self, tmp_path: Path) -> None:
        """Baseline [2, 8), candidate [4, 8): either could be higher: inconclusive (exit 1 only with --strict)."""
        base, cand = _sweep(tmp_path, "a", 2.0, 8.0), _sweep(tmp_path, "b", 4.0, 8.0)
        code, out = _compare(tmp_path, base, cand)
        assert (code, out["change"]) == (0, "inconclusive") and "overlap" in str(out["reason"])
        assert _compare(tmp_path, base, cand, "--strict")[0] == 1

    def test_the_same_bracket_is_unchanged_within_its_width(self, tmp_path: Path) -> None:
        """Both [4, 8): unchanged, the change is said smaller than 4 req/s."""
        code, out = _compare(tmp_path, _sweep(tmp_path, "a", 4.0, 8.0), _sweep(tmp_path, "b", 4.0, 8.0))
        assert (code, out["change"]) == (0, "unchanged") and "smaller than its width (4 req/s)" in str(out["reason"])

    def test_fitted_intervals_decide_a_regression_only_wholly_below(self, tmp_path: Path) -> None:
        """Both brackets [4, 8): by brackets unchanged. Fitted, baseline 7.1 [6.4, 7.8] against 4.6 [4.2, 5.1]: the
        intervals show the fall (exit 1); against 6.6 [5.9, 7.3] they overlap: no regression is claimed."""
        base = _sweep(tmp_path, "a", 4.0, 8.0, fitted=(7.1, 6.4, 7.8))
        code, out = _compare(tmp_path, base, _sweep(tmp_path, "b", 4.0, 8.0, fitted=(4.6, 4.2, 5.1)))
        assert (code, out["change"]) == (1, "regressed") and "wholly below" in str(out["reason"])
        assert (out["delta_low"], out["delta_high"]) == pytest.approx((4.2 - 7.8, 5.1 - 6.4))
        assert "4.6 [4.2, 5.1]" in (tmp_path / "out" / "compare.md").read_text()
        code, out = _compare(tmp_path, base, _sweep(tmp_path, "c", 4.0, 8.0, fitted=(6.6, 5.9, 7.3)))
        assert (code, out["change"]) == (0, "unchanged") and "intervals overlap" in str(out["reason"])
        code, out = _compare(tmp_path, base, _sweep(tmp_path, "d", 2.0, 8.0, fitted=(6.6, 5.9, 7.3)))
        assert (code, out["change"]) == (0, "inconclusive")
        code, out = _compare(tmp_path, base, _sweep(tmp_path, "e", 8.0, 16.0, fitted=(9.9, 9.0, 11.0)))
        assert (code, out["change"]) == (0, "improved")

    def test_both_open_above_is_inconclusive(self, tmp_path: Path) -> None:
        """Both held every point up to 8: nothing bounds either capacity, no change can be claimed."""
        _, out = _compare(tmp_path, _sweep(tmp_path, "a", 8.0, None), _sweep(tmp_path, "b", 8.0, None))
        assert out["change"] == "inconclusive"

    @pytest.mark.parametrize(("kwargs", "why"), [({"mode": "concurrency"}, "modes differ"),
                                                 ({"slo": {"p99_latency_ms": 4000.0, "max_error_rate": 0.05}},
                                                  "the SLOs differ (p99_latency_ms: 8000.0 vs 4000.0)"),
                                                 ({"dataset": "audioqa-v1@def"}, "datasets differ")])
    def test_different_capacities_are_not_compared(self, tmp_path: Path, kwargs: dict[str, object], why: str) -> None:
        """Another mode, other SLO limits or another dataset measure another capacity: refused, exit 2."""
        code, out = _compare(tmp_path, _sweep(tmp_path, "a", 4.0, 8.0), _sweep(tmp_path, "b", 2.0, 4.0, **kwargs))  # type: ignore[arg-type]
        assert (code, out["change"]) == (2, "not_comparable") and why in str(out["reason"])

    def test_a_refusal_writes_into_neither_sweep(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Without --out, a refused sweep comparison says its one difference once and writes into neither run."""
        base, cand = _sweep(tmp_path, "a", 4.0, 8.0), _sweep(tmp_path, "b", 2.0, 4.0, mode="concurrency")
        before = {d: sorted(p.name for p in d.iterdir()) for d in (base, cand)}
        assert main(["compare", str(base), str(cand)]) == 2
        err = capsys.readouterr().err
        assert err.count("not comparable") == 1 and "modes differ" in err and "nothing written" in err
        assert {d: sorted(p.name for p in d.iterdir()) for d in (base, cand)} == before

    def test_a_sweep_against_another_kind_of_run_is_a_usage_error(self, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
        """A sweep and a run-aiperf run: exit 2, naming which is the sweep."""
        other = tmp_path / "other"
        other.mkdir()
        (other / "events.jsonl").write_bytes(msgspec.json.encode(RunStarted(command="run-aiperf", seq=1)) + b"\n")
        assert main(["compare", str(_sweep(tmp_path, "a", 4.0, 8.0)), str(other)]) == 2
        assert "a sweep compares only with another sweep" in capsys.readouterr().err
