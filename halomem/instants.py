"""Instants and spans as callers give them, parsed by one function each for every transport.

An instant (an as-of search, an export's as-of, replay): ISO 8601 (``2026-12-01T09:30:00Z``, a date
alone, an offset; naive times are UTC) or a span back from now (``90s``, ``30m``, ``2h``, ``3d``,
``1w``). The future is refused: the store cannot know it, and "as of tomorrow" silently meaning
"now" would hide a caller's mistake. So is anything before 1970 and anything a datetime cannot
hold (year 1 with an offset, a span of ten thousand years): one InvalidInputError, so 400 over HTTP
and MCP and exit 3 on the CLI, never an overflow.

A span (a token's expiry, a retention ttl): a whole number and a unit, ``30d``, ``12h``, ``2w``,
bounded by what it is for. A window in days (a report's, a retention's) by ``check_days``.
"""
from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone

from .errors import InvalidInputError
from .limits import MAX_AS_OF_CHARS, MAX_DAYS

_SPAN = re.compile(r"^\s*(\d{1,7})\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# a client's clock may run a little ahead of the database's
FUTURE_SKEW = timedelta(seconds=5)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _shown(value: object) -> str:
    return repr(str(value)[:MAX_AS_OF_CHARS].encode("ascii", "backslashreplace").decode("ascii"))


def parse_instant(value: object, *, what: str = "as_of", now: datetime | None = None) -> datetime | None:
    """``value`` as an aware UTC datetime, None for "now" (None or empty); InvalidInputError for
    anything else, whatever its range."""
    if value is None or value == "":
        return None
    now = now or datetime.now(timezone.utc)
    try:
        if isinstance(value, datetime):
            when = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        elif isinstance(value, str) and len(value) <= MAX_AS_OF_CHARS and value.isprintable():
            text = value.strip()
            span = _SPAN.fullmatch(text)
            if span:
                when = now - timedelta(seconds=int(span.group(1)) * _UNIT_SECONDS[span.group(2)])
            else:
                try:
                    when = datetime.fromisoformat(text.replace("z", "Z"))
                except ValueError:
                    raise InvalidInputError(f"{what} {_shown(text)} is neither an ISO 8601 time nor a span back"
                                            " from now such as 2h or 3d") from None
                when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
        else:
            raise InvalidInputError(f"{what} must be an ISO 8601 time or a span such as 2h (at most"
                                    f" {MAX_AS_OF_CHARS} printable characters)")
        when = when.astimezone(timezone.utc)
    except (OverflowError, ValueError):  # year 1 with a positive offset, a span past year 1
        raise InvalidInputError(f"{what} {_shown(value)} is out of range (1970 to now)") from None
    if when > now + FUTURE_SKEW:
        raise InvalidInputError(f"{what} {when.isoformat()} is in the future")
    if when < EPOCH:
        raise InvalidInputError(f"{what} {when.isoformat()} is before 1970")
    return when


def parse_span(value: object, *, what: str, limit: timedelta) -> timedelta:
    """A positive span such as ``30d``, ``12h``, ``90m`` or ``2w``, at most ``limit``."""
    match = _SPAN.match(value) if isinstance(value, str) else None
    if not match or int(match.group(1)) == 0:
        raise InvalidInputError(f"{what} {_shown(value)} is not a duration such as 30d, 12h, 90m or 2w")
    seconds = int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds > limit.total_seconds():
        raise InvalidInputError(f"{what} {_shown(value)} is longer than the limit of {limit.days} days")
    return timedelta(seconds=seconds)


def check_days(value: object, *, what: str = "days", allow_zero: bool = False) -> float:
    """A window in days: a finite number in (0, MAX_DAYS] (or 0 when ``allow_zero``: off)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not (0 <= value if allow_zero else 0 < value) or value > MAX_DAYS:
        raise InvalidInputError(f"{what} must be a number of days in {'0' if allow_zero else '(0'}..{MAX_DAYS}]")
    return float(value)
