"""Figures read as a person writes them: significant digits, thousands grouped, never scientific notation."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from orchestrator.base.figures import figure, figure_with_unit
from orchestrator.judge.sampled_trend import SampledTrendRule, judge_sampled_trend


class TestFigure:
    @pytest.mark.parametrize("value, signed, text", [
        (1683.0, True, "+1,680"), (-799.2, True, "-799"), (1683.0, False, "1,680"), (12.5, False, "12.5"),
        (12.0, False, "12"), (0.05, False, "0.05"), (0.0000123, False, "0.0000123"), (1e-5, False, "0.00001"),
        (2.5e6, False, "2,500,000"), (0.0, True, "+0"), (0.0, False, "0"), (-0.0004567, True, "-0.000457"),
        (999.6, False, "1,000"), (math.inf, True, "+inf"), (-math.inf, False, "-inf"),
    ])
    def test_reads_plainly(self, value: float, signed: bool, text: str):
        """Three significant digits by default, signs where asked, no exponent."""
        assert figure(value, signed=signed) == text

    def test_digits(self):
        """More digits where a figure needs them; .3g's reading for everyday magnitudes is unchanged."""
        assert figure(60.0, 6) == "60" and figure(0.123456789, 6) == "0.123457" and figure(1234.5, 2) == "1,200"
        for v in (0.5, 1.25, 42.0, 99.9, -3.14, 0.0123):
            assert figure(v) == f"{v:.3g}"

    @pytest.mark.parametrize("exponent", range(-9, 10))
    def test_never_scientific(self, exponent: int):
        """No exponent at any magnitude from 1e-9 to 1e9."""
        assert not re.search(r"\d[eE][+-]?\d", figure(1.2345 * 10 ** exponent, signed=True))

    def test_with_unit(self):
        """The interval of the issue's soak headline reads '+1,680 MiB/h'."""
        assert figure_with_unit(1683.2, "MiB/h", signed=True) == "+1,680 MiB/h"
        assert figure_with_unit(None, "MiB/h") == "-"


class TestVerdictReasons:
    def test_a_steep_leak_reads_without_exponents(self):
        """A soak leaking about 1,700 MiB/h: its memory verdict's reason, which the console, soak.md, soak.html
        and the live page all show, holds no scientific notation (it read '+1.68e+03 MiB/h')."""
        times = np.arange(0.0, 900.0, 10.0)
        values = 400.0 + times * (1700.0 / 3600.0) + np.random.default_rng(1).normal(0.0, 1.0, times.size)
        verdict = judge_sampled_trend(times, values, SampledTrendRule())
        assert verdict.outcome == "fail" and "MiB/h" in verdict.reason
        assert not re.search(r"\d[eE][+-]?\d", verdict.reason), verdict.reason
        assert re.search(r"\+1,[0-9]{3} MiB/h", verdict.reason), verdict.reason
