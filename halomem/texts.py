"""Text as halomem compares it: two memories hold the same text when their normalised texts match.

Standard library only: the write path keys each new memory with it (write.consolidate) and the
migration that introduced the keys (db.migrations v14) keyed the rows stored before.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACE = re.compile(r"\s+")


def content_key(text: str) -> str:
    """A digest of ``text`` normalised: NFKC, case folded, white space collapsed and trimmed."""
    normal = _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:32]
