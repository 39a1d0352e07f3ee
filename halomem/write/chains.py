"""The one supersedence rule, used by `supersede` and by keyed ingest alike: close the old head
(only if it still is one), and give its successor the old source unless it names its own, and
the old place in that source when the source stays the same."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from ..db.schema import memories
from ..types import Namespace


def close_head(conn: Any, ns: Namespace, old_id: str, new_id: str) -> sa.Row | None:
    """End ``old_id``'s validity and point it at ``new_id``; its (source, position), or None when
    it is not a live head of ``ns`` (the caller explains why)."""
    return conn.execute(
        sa.update(memories)
        .where(memories.c.id == old_id, memories.c.namespace == ns.path,
               memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None))
        .values(t_valid_to=sa.func.now(), superseded_by=new_id)
        .returning(memories.c.source, memories.c.position)).first()


def retire_heads(conn: Any, ns: Namespace, ids: list[str], lived: timedelta | None = None) -> list[str]:
    """End the validity of those of ``ids`` that are live heads of ``ns``, with no successor: the
    fact is no longer current (its document is gone, its time to live passed). ``lived``: each
    ends that long after it became valid (a ttl: when present reads stopped showing it), else now.
    History and as-of still show it; returns the ids closed."""
    if not ids:
        return []
    ended = sa.func.now() if lived is None else sa.func.least(
        memories.c.t_valid_from + sa.literal(lived, sa.Interval()), sa.func.now())
    return list(conn.execute(
        sa.update(memories)
        .where(memories.c.id.in_(ids), memories.c.namespace == ns.path,
               memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None))
        .values(t_valid_to=ended).returning(memories.c.id)).scalars())


def successor_source(given: str | None, closed: sa.Row) -> str | None:
    """A successor keeps its predecessor's source unless it names one."""
    return given if given is not None else closed.source


def successor_place(source: str | None, closed: sa.Row) -> int | None:
    """The predecessor's place in its source, kept when the successor stays in that source."""
    return closed.position if source == closed.source else None
