"""Records stored as data (JSONB): what a value may hold, and the one canonical encoding a hash covers.

Standard library only: the audit trail writes records with it, and the migration that reads the
old free-text rows cleans their fields with it.
"""
from __future__ import annotations

import json
import math
from typing import Any

_FLOAT_LIMIT = 1e15  # beyond it JSONB prints a float as an integer, which would read back as another type


def clean(value: Any) -> Any:
    """A record's value as stored: JSON types only, text without NULs or lone surrogates (JSONB refuses
    both), floats finite and within what JSONB returns as a float. A caller's text is kept as data,
    whatever it holds: it is never spliced into a string that is parsed later."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if abs(value) >= _FLOAT_LIMIT:
            return int(value)
        return value + 0.0  # -0.0 reads back from JSONB as 0.0
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {clean(str(k)): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return clean(str(value))


def canonical(value: Any) -> str:
    """The canonical encoding the hash covers: sorted keys, no spaces, UTF-8 as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
