"""Columns of numbers as numpy arrays, built from the lists a decoder gives: floats with NaN for an absent value,
int64 with INT_ABSENT. Imports nothing from the project."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["INT_ABSENT", "Floats", "Ints", "float_column", "int_column"]

INT_ABSENT = -(2**63)  # an absent integer in an int64 column (no time or count reaches it)
Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def float_column(values: list[float | None]) -> Floats:
    """The values as float64, None as NaN."""
    return np.fromiter(values, np.float64, len(values))


def int_column(values: list[int | None], absent: int = INT_ABSENT) -> Ints:
    """The values as int64, None as `absent`. Raises OverflowError for a value beyond int64."""
    try:
        return np.fromiter(values, np.int64, len(values))
    except TypeError:  # a None among them: the second pass only where one is
        return np.fromiter([absent if v is None else v for v in values], np.int64, len(values))
