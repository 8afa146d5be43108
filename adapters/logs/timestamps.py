"""Log timestamps (ISO 8601 text or unix seconds/ms/ns numbers) to integer unix nanoseconds."""

from __future__ import annotations

import re
from datetime import UTC, datetime

__all__ = ["parse_timestamp", "leading_timestamp"]

# A timestamp at the start of a plain-text line: "2024-05-01T12:00:00.123Z", "2024-05-01 12:00:00,123".
_LEADING = re.compile(r"^\[?(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)")
_FRACTION = re.compile(r"[.,](\d{1,9})")


def parse_timestamp(value: object) -> int | None:
    """Unix ns of an ISO 8601 string (naive = UTC) or a number (s, ms, us or ns by magnitude); None
    when the value is not a timestamp."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        if v <= 0:
            return None
        # Magnitude picks the unit: seconds ~1.7e9, ms ~1.7e12, us ~1.7e15, ns ~1.7e18.
        # A float carries ~16 digits: keep microseconds, the finest a float seconds value can hold.
        for limit, scale in ((1e11, 10**9), (1e14, 10**6), (1e17, 10**3)):
            if v < limit:
                if isinstance(value, float):
                    return int(round(v * scale / 1000)) * 1000 if scale > 1000 else int(round(v * scale))
                return value * scale
        return int(value)
    if not isinstance(value, str) or len(value) < 10:
        return None
    text = value.strip().replace(",", ".")
    nanos = 0
    match = _FRACTION.search(text, 19)
    if match:
        digits = match.group(1)
        nanos = int(digits.ljust(9, "0"))
        text = text[: match.start()] + text[match.end():]
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp()) * 1_000_000_000 + nanos


def leading_timestamp(text: str) -> int | None:
    """Unix ns of a timestamp that starts a plain-text line, if there is one."""
    match = _LEADING.match(text)
    return parse_timestamp(match.group(1)) if match else None
