"""Opaque page cursors for newest-first listings: a row's (validity start, id), base64url-coded so
callers pass it back as is and never build one. A cursor carries nothing the caller did not see."""
from __future__ import annotations

import base64
import binascii
from datetime import datetime

from ..errors import InvalidInputError
from ..limits import MAX_CURSOR_CHARS, MAX_ID_CHARS


def encode(valid_from: datetime, memory_id: str) -> str:
    return base64.urlsafe_b64encode(f"{valid_from.isoformat()}|{memory_id}".encode()).decode().rstrip("=")


def decode(cursor: object) -> tuple[datetime, str]:
    if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_CHARS:
        raise InvalidInputError("cursor must be the next_cursor of an earlier page")
    try:
        if not cursor.isascii() or not cursor.isprintable():  # the alphabet only: b64decode would drop the rest
            raise ValueError(cursor)
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        when, _, memory_id = raw.partition("|")
        valid_from = datetime.fromisoformat(when)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInputError("cursor must be the next_cursor of an earlier page") from None
    if not memory_id or valid_from.tzinfo is None or not memory_id.isprintable() or len(memory_id) > MAX_ID_CHARS:
        raise InvalidInputError("cursor must be the next_cursor of an earlier page")
    return valid_from, memory_id
