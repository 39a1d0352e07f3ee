"""Concept paths: '/'-separated segments, like namespaces but naming a concept inside one."""
from __future__ import annotations

import re

from ..errors import InvalidInputError

CONCEPT_PATH = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")
MAX_CONCEPT_PATH = 255


def check_concept_path(path: object) -> str:
    if (not isinstance(path, str) or len(path) > MAX_CONCEPT_PATH or not CONCEPT_PATH.match(path)
            or any(seg in (".", "..") for seg in path.split("/"))):
        shown = str(path)[:80]
        raise InvalidInputError(f"concept path {shown!r} must be '/'-separated segments of letters, digits, "
                                f"'-', '_', '.' (no '.' or '..' segments, at most {MAX_CONCEPT_PATH} characters)")
    return path
