"""Columns of numbers as numpy arrays, built straight from decoded rows: floats with NaN for an absent value,
int64 with INT_ABSENT. Imports nothing from the project."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["INT_ABSENT", "Floats", "Ints", "float_column", "int_column"]

INT_ABSENT = -(2**63)  # an absent integer in an int64 column (no time or count reaches it)
Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
_Row = TypeVar("_Row")


def float_column(rows: Sequence[_Row], get: Callable[[_Row], float | None]) -> Floats:
    """get(row) of every row as float64, None as NaN (one C loop: no list between the rows and the array)."""
    return np.fromiter(map(get, rows), np.float64, len(rows))


def int_column(rows: Sequence[_Row], get: Callable[[_Row], int | None], absent: int = INT_ABSENT) -> Ints:
    """get(row) of every row as int64, None as `absent`. Raises OverflowError for a value beyond int64."""
    try:
        return np.fromiter(map(get, rows), np.int64, len(rows))
    except TypeError:  # a None among them: the second pass only where one is
        values: Any = (absent if v is None else v for v in map(get, rows))
        return np.fromiter(values, np.int64, len(rows))
