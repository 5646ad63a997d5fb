"""The Python API's arguments checked as the CLI checks its options: a clear TypeError for a value of the wrong
kind, a UserError (exit 2) for a value of the right kind that means nothing, never an internal error later.

    since     a datetime (naive: this machine's local time, as Python reads it), a date, a timedelta (that long
              ago), "2d"/"90m" or ISO text (as --since), or None -> an aware datetime
    limit     a whole number >= 1
    timeout   seconds (int or float >= 0), "10m"/"2h" (as --timeout), or None
    flags     True or False only: submit(local="yes") would otherwise be true
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from smtrain import exit_codes
from smtrain.errors import UserError


def since_arg(value: Any, name: str = "since") -> dt.datetime | None:
    from smtrain.spec.units import parse_since

    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.astimezone()  # naive: local time, as datetime.now() gives it
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day).astimezone()
    if isinstance(value, dt.timedelta):
        return dt.datetime.now(dt.timezone.utc) - value
    if isinstance(value, str):
        try:
            return parse_since(value)
        except ValueError as exc:
            raise UserError(f"{name}: {exc}", exit_codes.USAGE) from None
    raise TypeError(f"{name} takes a datetime, a date, a timedelta, or text such as '2d' or '2026-11-01', "
                    f"not {type(value).__name__}")


def limit_arg(value: Any, name: str = "limit") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} takes a whole number, not {type(value).__name__}")
    if value < 1:
        raise UserError(f"{name} must be 1 or more, not {value}", exit_codes.USAGE)
    return value


def timeout_arg(value: Any, name: str = "timeout") -> float | None:
    from smtrain.spec.units import parse_duration

    if value is None:
        return None
    if isinstance(value, str):
        try:
            return float(parse_duration(value))
        except ValueError as exc:
            raise UserError(f"{name}: {exc}", exit_codes.USAGE) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} takes seconds (a number) or text such as '10m', not {type(value).__name__}")
    if not value >= 0:  # NaN too
        raise UserError(f"{name} must be 0 seconds or more, not {value}", exit_codes.USAGE)
    return float(value)


def flag_arg(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} takes True or False, not {value!r}")
    return value
