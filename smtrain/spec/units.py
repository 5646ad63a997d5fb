"""Parsing of the human units a job spec uses: durations and byte sizes.

Numbers are read exactly (Decimal), so "1.5GiB" is a whole number of bytes and a 400-digit
value is refused with a message instead of overflowing a float.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

from smtrain.spec.problems import brief

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# Bodies shared with the JSON Schema (smtrain.spec.schema): matched whole, spaces allowed around.
DURATION_PATTERN = r"\s*[0-9]+(?:\.[0-9]+)?\s*[smhd]?\s*"
SIZE_PATTERN = r"\s*[0-9]+(?:\.[0-9]+)?\s*(?:[KkMmGgTt][Ii]?)?[Bb]\s*"
_DURATION_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd]?)\s*")
_SIZE_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*((?:[KMGT]I?)?B)\s*", re.IGNORECASE)

# Decimal units as AWS prices and sizes disks; binary units when the user asks for them.
_SIZE_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}
SIZE_UNITS_HINT = "B, KB, MB, GB, TB (powers of 10) or KiB, MiB, GiB, TiB (powers of 2)"
# The largest whole number a JSON reader keeps exactly; far beyond any real size or duration.
LARGEST = 2**53 - 1


def _whole(number: Decimal, unit: int, value: object, what: str) -> int:
    total = number * unit
    if total != total.to_integral_value():
        raise ValueError(f"{brief(value)} is not a whole number of {what}")
    if total > LARGEST:
        raise ValueError(f"{brief(value)} is too large")
    return int(total)


def parse_duration(value: object) -> int:
    """Seconds in `value`: an int of seconds, or a string such as "90m", "6h", "1d", "3600"."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 90m, 6h, 1d or a number of seconds")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return _whole(Decimal(value), 1, value, "seconds")
    if isinstance(value, float) and value >= 0 and value.is_integer():
        return _whole(Decimal(value), 1, value, "seconds")
    if isinstance(value, str):
        m = _DURATION_RE.fullmatch(value)
        if m:
            return _whole(Decimal(m.group(1)), _DURATION_UNITS[m.group(2) or "s"], value, "seconds")
    raise ValueError(f"{brief(value)} is not a duration: use 90m, 6h, 1d or a number of seconds")


def parse_size(value: object) -> int:
    """Bytes in `value`, a number with its unit: "40GB" (10^9 bytes), "100GiB" (2^30), "512MB".

    A bare number is refused: read as bytes it would be a trap (`min_gpu_memory: 24` would ask
    for 24 bytes and match every GPU).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"expected a size with its unit, such as 40GB or 100GiB; units: {SIZE_UNITS_HINT}")
    text = value if isinstance(value, str) else None
    if text is None or re.fullmatch(r"\s*[0-9]+(?:\.[0-9]*)?\s*", text):
        number = str(value).strip() if len(str(value)) < 20 else "40"
        raise ValueError(f"{brief(value)} has no unit: write it as {number}GB or {number}GiB; units: {SIZE_UNITS_HINT}")
    m = _SIZE_RE.fullmatch(text)
    if m:
        return _whole(Decimal(m.group(1)), _SIZE_UNITS[m.group(2).upper()], value, "bytes")
    raise ValueError(f"{brief(value)} is not a size: use a number with a unit, such as 40GB or 100GiB; "
                     f"units: {SIZE_UNITS_HINT}")


def format_duration(seconds: int) -> str:
    """The shortest exact form: 86400 -> "1d", 5400 -> "90m", 61 -> "61s"."""
    for unit in ("d", "h", "m"):
        size = _DURATION_UNITS[unit]
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def format_gb(num_bytes: int) -> str:
    """Bytes as decimal gigabytes, the unit instance specs and volumes use."""
    gb = num_bytes / 10**9
    return f"{gb:g}GB"


def parse_since(value: str, now: dt.datetime | None = None) -> dt.datetime:
    """A point in time: a duration ago ("2h", "7d", "90m") or an ISO date/time (UTC unless it says)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    try:
        return now - dt.timedelta(seconds=parse_duration(value))
    except ValueError:
        pass
    except OverflowError:  # further back than datetime reaches
        raise ValueError(f"{brief(value)} reaches back further than any date") from None
    try:
        when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{brief(value)} is neither a duration (2h, 7d) nor an ISO date/time (2025-01-31T12:00)") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)
