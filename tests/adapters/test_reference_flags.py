"""The reference server's precision and wrong-answer fault flags: parsed, validated, named in the fault list; the
wrong-item share picks its items deterministically."""

from __future__ import annotations

import argparse

import pytest

from adapters.reference.serve import add_server_arguments, settings_from_args


def _parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_server_arguments(p)
    return p.parse_args(["--model-name", "m", *argv])


class TestFlags:
    def test_compute_type_defaults_to_int8_and_takes_float32(self) -> None:
        """int8 unless asked; float32 is the full-precision reference of the same model files."""
        assert _parse().compute_type == "int8"
        assert _parse("--compute-type", "float32").compute_type == "float32"

    def test_unknown_compute_type_is_refused(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A compute type CTranslate2's CPU backend does not run is refused, listing the choices."""
        with pytest.raises(SystemExit):
            _parse("--compute-type", "fp8")
        assert "invalid choice: 'fp8'" in capsys.readouterr().err

    def test_wrong_kinds_repeat_and_show_as_an_active_fault(self) -> None:
        """--fault-wrong-kind repeats; the settings carry every kind and list the fault as active."""
        settings = settings_from_args(_parse("--fault-wrong-kind", "channel", "--fault-wrong-kind", "onset"))
        assert settings.faults.wrong_kinds == ("channel", "onset")
        assert settings.faults.active == ["wrong_kinds"]

    def test_a_kind_the_engine_lacks_is_refused(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A kind that is not one of the router's analyses is refused."""
        with pytest.raises(SystemExit):
            _parse("--fault-wrong-kind", "mood")
        assert "invalid choice: 'mood'" in capsys.readouterr().err

    def test_wrong_item_share_is_parsed_bounded_and_active(self) -> None:
        """--fault-wrong-item-share takes a share in 0..1 and lists itself among the active faults."""
        settings = settings_from_args(_parse("--fault-wrong-item-share", "0.1"))
        assert settings.faults.wrong_item_share == 0.1 and settings.faults.active == ["wrong_item_share"]
        with pytest.raises(ValueError, match=r"--fault-wrong-item-share 1.5 must be within 0..1"):
            settings_from_args(_parse("--fault-wrong-item-share", "1.5"))


class TestWrongItems:
    def test_the_share_is_met_and_the_same_items_are_chosen_every_time(self) -> None:
        """Of 4000 distinct (audio, question) items a share of 0.10 picks 10 % (within 1.5 points), every
        draw is the same for the same item whatever the order, and a larger share picks a superset."""
        from adapters.reference.faults import FaultSettings, FaultState, item_draw

        items = [(bytes([i % 256, i // 256]) * 50, f"question {i % 7}") for i in range(4000)]
        ten = FaultState(FaultSettings(wrong_item_share=0.10))
        picked = {i for i, (audio, q) in enumerate(items) if ten.wrong_item(audio, q)}
        assert abs(len(picked) / len(items) - 0.10) < 0.015
        again = {i for i, (audio, q) in reversed(list(enumerate(items))) if ten.wrong_item(audio, q)}
        assert again == picked
        twenty = {i for i, (audio, q) in enumerate(items) if FaultState(FaultSettings(wrong_item_share=0.2)).wrong_item(audio, q)}
        assert picked < twenty
        # The question is part of the item: one clip asked two ways draws twice.
        assert item_draw(b"clip", "How many beeps?") != item_draw(b"clip", "How many tones?")
        assert not FaultState(FaultSettings()).wrong_item(b"clip", "How many beeps?")


class TestOverloadFaults:
    def test_swap_and_truncate_flags_reach_the_settings(self) -> None:
        """--fault-swap-above and --fault-truncate-above are parsed and named among the active faults."""
        faults = settings_from_args(_parse("--fault-swap-above", "1", "--fault-truncate-above", "3")).faults
        assert (faults.swap_above, faults.truncate_above) == (1, 3)
        assert {"swap_above", "truncate_above"} <= set(faults.active)

    def test_swap_answers_with_the_previous_request_only_under_load(self) -> None:
        """Alone, a request keeps its answer; with more than N in flight it gets the previous request's."""
        from adapters.reference.faults import FaultSettings, FaultState, under_load

        settings = FaultSettings(swap_above=1)
        state = FaultState(settings)
        assert under_load(settings, state, 1, "three beeps") == "three beeps"
        assert under_load(settings, state, 2, "a dog barks") == "three beeps"

    def test_truncate_keeps_half_the_words(self) -> None:
        """With more than N in flight the answer is cut to the first half of its words."""
        from adapters.reference.faults import FaultSettings, FaultState, under_load

        settings = FaultSettings(truncate_above=0)
        assert under_load(settings, FaultState(settings), 1, "there are four beeps here") == "there are"
