"""Input checks shared by every write: content, source and provenance."""
from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidInputError
from ..limits import MAX_CONTENT_CHARS, MAX_SOURCE_CHARS, check_text


def check_content(content: object) -> str:
    return check_text(content, "content", MAX_CONTENT_CHARS)


def check_source(source: object) -> str | None:
    if source is None or source == "":
        return None
    return check_text(source, "source", MAX_SOURCE_CHARS, allow_empty=True)


def check_provenance(provenance: object) -> dict[str, Any]:
    if provenance is None:
        return {}
    if not isinstance(provenance, dict):
        raise InvalidInputError("provenance must be a JSON object")
    text = json.dumps(provenance, ensure_ascii=False)
    if "\\u0000" in text:
        raise InvalidInputError("provenance contains a NUL character")
    check_text(text, "provenance", MAX_CONTENT_CHARS)  # surrogates, and a bound on its size
    return provenance
