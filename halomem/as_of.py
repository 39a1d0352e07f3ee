"""The instant an as-of search reads the store at, parsed once for every transport.

Accepted: ISO 8601 (``2026-12-01T09:30:00Z``, a date alone, an offset; naive times are UTC) or a
span back from now (``90s``, ``30m``, ``2h``, ``3d``, ``1w``). The future is refused: the store
cannot know it, and "as of tomorrow" silently meaning "now" would hide a caller's mistake.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from .errors import InvalidInputError
from .limits import MAX_AS_OF_CHARS

_SPAN = re.compile(r"(\d{1,7})([smhdw])")
_UNIT = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
# a client's clock may run a little ahead of the database's
FUTURE_SKEW = timedelta(seconds=5)


def parse_as_of(value: object, *, now: datetime | None = None) -> datetime | None:
    """``value`` as an aware UTC datetime, None for "now" (None or empty)."""
    if value is None or value == "":
        return None
    now = now or datetime.now(timezone.utc)
    if isinstance(value, datetime):
        when = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    elif isinstance(value, str) and len(value) <= MAX_AS_OF_CHARS and value.isprintable():
        text = value.strip()
        span = _SPAN.fullmatch(text)
        if span:
            try:
                when = now - timedelta(**{_UNIT[span.group(2)]: int(span.group(1))})
            except OverflowError:
                raise InvalidInputError(f"as_of {text!r} reaches back before 1970") from None
        else:
            try:
                when = datetime.fromisoformat(text.replace("z", "Z"))
            except ValueError:
                raise InvalidInputError(f"as_of {text[:MAX_AS_OF_CHARS]!r} is neither an ISO 8601 time nor a span"
                                        " back from now such as 2h or 3d") from None
            when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    else:
        raise InvalidInputError(f"as_of must be an ISO 8601 time or a span such as 2h (at most {MAX_AS_OF_CHARS}"
                                " printable characters)")
    when = when.astimezone(timezone.utc)
    if when > now + FUTURE_SKEW:
        raise InvalidInputError(f"as_of {when.isoformat()} is in the future")
    if when.year < 1970:
        raise InvalidInputError(f"as_of {when.isoformat()} is before 1970")
    return when
