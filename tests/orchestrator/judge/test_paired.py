"""A model against its reference: gate choice by precision and sampling, pairing rules, and the config that asks for it."""

from __future__ import annotations

import pytest

from orchestrator.base.errors import ConfigError
from orchestrator.config import NoninferiorityCriteria, NoninferiorityGate, config_from_dict
from orchestrator.events import GateCitation
from orchestrator.judge.paired import ChosenGate, Judged, capacity_rejection, choose_gate, decide_paired, is_quantized

CITE = GateCitation(file="bench.toml", revision="sha256:ab", entry="models[0].correctness.noninferiority")
NI = NoninferiorityCriteria(margin=3.0, quantized_gate=NoninferiorityGate(margin=5.0),
                            sampled_gate=NoninferiorityGate(margin=4.0, relative_margin=0.1), seeds=3)


def _side(verdicts: list[str], arm: str = "audio") -> dict[tuple[str, str], list[Judged]]:
    return {(f"i{n}", arm): [Judged(verdict=v)] for n, v in enumerate(verdicts)}


class TestGateChoice:
    def test_quantized_candidate_takes_the_quantized_gate(self) -> None:
        """An int8 candidate that does not sample is held to quantized_gate, cited with its key."""
        gate = choose_gate(NI, quantized=is_quantized("int8"), sampled=False, where="b.toml models[0]", citation=CITE)
        assert (gate.key, gate.margin, gate.seeds) == ("quantized_gate", 5.0, 1)
        assert gate.source == "b.toml models[0].quantized_gate"
        assert gate.citations == [GateCitation(file="bench.toml", revision="sha256:ab",
                                               entry="models[0].correctness.noninferiority.quantized_gate")]

    def test_sampling_wins_over_quantization_and_full_precision_takes_the_plain_gate(self) -> None:
        """Sampling picks sampled_gate (with its seeds) even when quantized; bf16/fp32 greedy keeps the margin."""
        sampled = choose_gate(NI, quantized=True, sampled=True, where="w", citation=CITE)
        assert (sampled.key, sampled.margin, sampled.relative_margin, sampled.seeds) == ("sampled_gate", 4.0, 0.1, 3)
        plain = choose_gate(NI, quantized=is_quantized("bf16"), sampled=False, where="w", citation=CITE)
        assert (plain.key, plain.margin) == ("gate", 3.0)
        assert [is_quantized(p) for p in ("float32", "fp16", "", "fp8", "nvfp4", "int4")] == \
            [False, False, False, True, True, True]

    def test_a_missing_special_gate_falls_back_to_the_margin(self) -> None:
        """Without quantized_gate, a quantized candidate is held to the plain margin, as the owners do."""
        gate = choose_gate(NoninferiorityCriteria(margin=2.0), quantized=True, sampled=False, where="w", citation=CITE)
        assert (gate.key, gate.margin) == ("gate", 2.0)


class TestPairing:
    GATE = ChosenGate(margin=5.0, key="quantized_gate", source="s", citations=[CITE])

    def test_agreeing_sides_pass_once_enough_problems_are_paired(self) -> None:
        """67 problems answered alike pass at 5 points; 66 are inconclusive, saying how many would decide."""
        for n, outcome in ((67, "pass"), (66, "inconclusive")):
            ref = _side(["correct", "wrong"] * (n // 2) + ["correct"] * (n % 2))
            r = decide_paired(ref, dict(ref), self.GATE, arms=["audio"], sampled=False, quantized=True)
            assert (r.outcome, r.n, r.b, r.c) == (outcome, n, 0, 0)
        assert r.items_needed is not None and r.items_needed > 66 and "would decide" in r.reason

    def test_capacity_rejections_leave_both_sides_and_other_failures_count_wrong(self) -> None:
        """A 422 beyond-capacity answer leaves the comparison (counted, message kept); an error and an
        incomplete answer count as the model's wrong answers; a problem the reference did not answer leaves."""
        ref = _side(["correct"] * 80)
        ref[("i79", "audio")] = [Judged(verdict="error")]
        cand = _side(["correct"] * 80)
        body = '{"error":{"code":"backend_rejected_request","message":"prompt exceeds the prefill profile"}}'
        cand[("i0", "audio")] = [Judged(verdict="error", capacity=capacity_rejection(422, body))]
        cand[("i1", "audio")] = [Judged(verdict="error")]
        cand[("i2", "audio")] = [Judged(verdict="incomplete")]
        del cand[("i3", "audio")]
        r = decide_paired(ref, cand, self.GATE, arms=["audio"], sampled=False, quantized=True)
        assert (r.out_of_capacity, r.reference_unanswered, r.n) == (1, 1, 78)
        assert (r.b, r.c, r.candidate_failures, r.candidate_incomplete) == (3, 0, 2, 1)
        assert r.capacity_messages == [body]
        assert "left the comparison on both sides" in r.reason

    def test_only_the_gate_arms_are_paired(self) -> None:
        """Problems of arms the gate does not cover are left out of n."""
        ref = {**_side(["correct"] * 5, "audio"), **_side(["wrong"] * 7, "silence")}
        r = decide_paired(ref, dict(ref), self.GATE, arms=["silence"], sampled=False, quantized=False)
        assert (r.n, r.both_wrong, r.arms) == (7, 7, ["silence"])

    def test_a_model_ten_points_worse_fails(self) -> None:
        """b = 20 of 100 against a 5-point margin: the lower bound exceeds it."""
        ref = _side(["correct"] * 60 + ["wrong"] * 40)
        cand = _side(["wrong"] * 20 + ["correct"] * 40 + ["wrong"] * 40)
        r = decide_paired(ref, cand, self.GATE, arms=["audio"], sampled=False, quantized=True)
        assert r.outcome == "fail" and r.lower is not None and r.lower > 5.0 and r.estimate == pytest.approx(20.0)

    def test_min_native_makes_a_weak_reference_not_comparable(self) -> None:
        """A reference below min_native cannot judge the model: not-comparable, with the reason."""
        gate = ChosenGate(margin=5.0, min_native=30.0, citations=[CITE])
        ref = _side(["correct"] * 10 + ["wrong"] * 90)
        r = decide_paired(ref, dict(ref), gate, arms=["audio"], sampled=False, quantized=False)
        assert r.outcome == "not-comparable" and "below min_native 30" in r.reason

    def test_sampled_answers_use_seed_means(self) -> None:
        """Three seeds a side: per-problem means and t bounds (method paired-t-seed-means)."""
        ref = {(f"i{n}", "audio"): [Judged(verdict="correct")] * 3 for n in range(40)}
        r = decide_paired(ref, dict(ref), ChosenGate(margin=4.0, key="sampled_gate", seeds=3), arms=["audio"],
                          sampled=True, quantized=False)
        assert (r.method, r.seeds, r.n) == ("paired-t-seed-means", 3, 40)

    def test_capacity_is_told_only_from_a_rejection(self) -> None:
        """A 422 backend_rejected_request or a length-limit 400/413 is a capacity rejection; a 500 or a 200 is not."""
        assert capacity_rejection(400, "audio of 75 s exceeds --max-audio-seconds 60")
        assert capacity_rejection(413, "request body exceeds the maximum input size")
        assert not capacity_rejection(500, "backend_rejected_request")
        assert not capacity_rejection(400, "invalid_request: messages must not be empty")


class TestConfig:
    BASE = {"models": [{"name": "m", "family": "f", "checkpoint": "c", "precision": "int8",
                        "correctness": {"noninferiority": {"margin": 3.0}}}]}

    def test_noninferiority_needs_a_reference(self) -> None:
        """A non-inferiority gate without [models.reference] is refused, naming the key."""
        with pytest.raises(ConfigError, match=r"models\[0\]\.correctness\.noninferiority: needs a \[models\.reference\]"):
            config_from_dict(self.BASE)

    def test_reference_takes_one_way_to_run(self) -> None:
        """[models.reference] needs exactly one of argv and native_argv."""
        data = {"models": [{**self.BASE["models"][0], "reference": {"precision": "float32"}}]}
        with pytest.raises(ConfigError, match=r"models\[0\]\.reference: set exactly one of argv"):
            config_from_dict(data)

    def test_owners_source_excludes_margins_written_here(self) -> None:
        """With source set, the owners' files give the gates: a margin beside it is refused."""
        model = {**self.BASE["models"][0], "reference": {"native_argv": ["{python}", "w"]},
                 "correctness": {"noninferiority": {"margin": 3.0, "source": "/x"}}}
        with pytest.raises(ConfigError, match=r"noninferiority\.source: the owners' files give the gates"):
            config_from_dict({"models": [model]})

    def test_some_gate_is_required(self) -> None:
        """A correctness table with neither min_pass_rate nor noninferiority is refused."""
        model = {**self.BASE["models"][0], "correctness": {}}
        with pytest.raises(ConfigError, match=r"set min_pass_rate, a \[models\.correctness\.noninferiority\] table"):
            config_from_dict({"models": [model]})
