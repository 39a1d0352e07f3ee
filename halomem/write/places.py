"""A memory's place among its source's memories: the order in which they were written.

Drivers read a memory beside its neighbours, the turn before and after it in a conversation or
the adjacent chunk of a document (retrieval.context). Places are counted per (namespace, source):
a new memory goes after the last one written, a superseding memory of the same source keeps the
place of the row it replaces (a corrected turn stays where it was), a row without a source has
none, and erasing a row takes its place away with its source.

Writers that give a source new places take its lock (a transaction-scoped advisory lock) in
(namespace, source) order, after their memory-row locks and before the lexicon, so two writers
never get one place, nor wait on each other in opposite orders.
"""
from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

PLACES_LOCK = 0x6A10_0002  # the first key of every source lock (two-key advisory locks)

# Two statements: a READ COMMITTED statement reads the snapshot taken when it began, so the read
# must begin after the lock is held to see the rows its previous holder committed.
_LOCK = sa.text("SELECT count(pg_advisory_xact_lock(:lock_class, hashtext(:ns || chr(31) || s)))"
                " FROM unnest(CAST(:sources AS text[])) AS s")
_LAST = sa.text("SELECT s, (SELECT max(m.position) FROM memories m WHERE m.namespace = :ns AND m.source = s) AS last"
                " FROM unnest(CAST(:sources AS text[])) AS s")


def assign(conn: Connection, ns: str, sources: Sequence[str | None],
           kept: Sequence[int | None] | None = None) -> list[int | None]:
    """Places for new rows of ``ns``, in the order written; a row with a ``kept`` place keeps it."""
    kept = list(kept) if kept is not None else [None] * len(sources)
    needed = sorted({src for src, keep in zip(sources, kept) if src is not None and keep is None})
    last: dict[str, int] = {}
    if needed:
        conn.execute(_LOCK, {"lock_class": PLACES_LOCK, "ns": ns, "sources": needed})
        last = {r.s: r.last or 0 for r in conn.execute(_LAST, {"ns": ns, "sources": needed})}
    places: list[int | None] = []
    for src, keep in zip(sources, kept):
        if src is None:
            places.append(None)
        elif keep is not None:
            places.append(keep)
        else:
            last[src] += 1
            places.append(last[src])
    return places
