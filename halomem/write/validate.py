"""Input checks shared by every write: content, source and provenance."""
from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidInputError

MAX_CONTENT_CHARS = 65_536
MAX_SOURCE_CHARS = 200


def check_content(content: object) -> str:
    if not isinstance(content, str):
        raise InvalidInputError("content must be text")
    if "\x00" in content:
        raise InvalidInputError("content contains a NUL byte")
    if not content.strip():
        raise InvalidInputError("content is empty")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInputError(f"content is {len(content)} characters; the limit is {MAX_CONTENT_CHARS}")
    return content


def check_source(source: object) -> str | None:
    if source is None or source == "":
        return None
    if not isinstance(source, str) or "\x00" in source or len(source) > MAX_SOURCE_CHARS:
        raise InvalidInputError(f"source must be text of at most {MAX_SOURCE_CHARS} characters without NUL bytes")
    return source


def check_provenance(provenance: object) -> dict[str, Any]:
    if provenance is None:
        return {}
    if not isinstance(provenance, dict):
        raise InvalidInputError("provenance must be a JSON object")
    text = json.dumps(provenance, ensure_ascii=False)
    if "\\u0000" in text:
        raise InvalidInputError("provenance contains a NUL character")
    return provenance
