"""Entity mentions: which registered entities a text names, matched at word boundaries."""
from __future__ import annotations

from typing import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import mentions
from ..embed.tokenize import word_boundary_pattern


def mentioned_entities(content: str, known: Mapping[int, tuple[str, list[str]]]) -> list[int]:
    return sorted(eid for eid, (name, aliases) in known.items()
                  if any(word_boundary_pattern(n).search(content) for n in (name, *aliases)))


def record_mentions(conn: Connection, pairs: Iterable[tuple[str, int]]) -> int:
    rows = [{"memory_id": m, "entity_id": e} for m, e in pairs]
    if rows:
        from sqlalchemy.dialects.postgresql import insert

        conn.execute(insert(mentions).values(rows).on_conflict_do_nothing())
    return len(rows)


def forget_mentions(conn: Connection, memory_id: str) -> None:
    conn.execute(sa.delete(mentions).where(mentions.c.memory_id == memory_id))
