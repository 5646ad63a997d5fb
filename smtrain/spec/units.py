"""Parsing of the human units a job spec uses: durations and byte sizes."""

from __future__ import annotations

import datetime as dt
import re

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")

# Decimal units as AWS prices and sizes disks; binary units when the user asks for them.
_SIZE_UNITS = {
    "": 1,
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
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?I?B?)\s*$", re.IGNORECASE)


def parse_duration(value: object) -> int:
    """Seconds in `value`: an int of seconds, or a string such as "90m", "6h", "1d", "3600"."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 90m, 6h, 1d or a number of seconds")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return value
    if isinstance(value, float) and value >= 0 and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = _DURATION_RE.match(value)
        if m:
            seconds = float(m.group(1)) * _DURATION_UNITS[m.group(2) or "s"]
            if seconds.is_integer():
                return int(seconds)
            raise ValueError(f"{value!r} is not a whole number of seconds")
    raise ValueError(f"{value!r} is not a duration: use 90m, 6h, 1d or a number of seconds")


def parse_size(value: object) -> int:
    """Bytes in `value`: an int of bytes, or a string such as "40GB" (10^9) or "100GiB" (2^30)."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 40GB or 100GiB")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return value
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m:
            unit = m.group(2).upper()
            if unit in _SIZE_UNITS:
                return int(float(m.group(1)) * _SIZE_UNITS[unit])
    raise ValueError(f"{value!r} is not a size: use a number with GB, GiB, MB, MiB or TB")


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
    try:
        when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{value!r} is neither a duration (2h, 7d) nor an ISO date/time (2025-01-31T12:00)") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)
