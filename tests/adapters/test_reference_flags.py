"""The reference server's precision and wrong-answer fault flags: parsed, validated, named in the fault list."""

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
