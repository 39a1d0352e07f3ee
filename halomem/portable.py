"""Export: a namespace as JSONL, to move it to another store (import: write.imports; another embedder
re-embeds).

An export holds one header line, then the namespace's records (and with ``subtree`` its
descendants'), in a fixed order so that export, import, export gives the same file:

- ``memory``: every version of the namespace's chains (live heads, superseded versions, erased
  tombstones without content), with ids, validity times, chain links, source and its place,
  provenance and key; ``as_of``: only the versions valid at that instant;
- ``entity`` (name and aliases), ``concept`` (path and text) and ``policy`` (its own facets).

Vectors are not exported: the importing store embeds each text with its own embedder. An import
writes everything in one transaction (all or nothing): ids, chains and validity times are kept,
the lexicon and its history are counted at each version's own instants (as-of statistics hold),
mentions are linked; a record already there and identical is skipped (re-import writes nothing),
one that differs refuses the whole import. Only the operator (local trust) exports a subtree; a
record's namespace is never outside what the export names.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Iterator

import sqlalchemy as sa

from .db.schema import concepts, entities, entity_aliases, memories, policies
from .types import Namespace
from .write.imports import FORMAT, MEMORY_FIELDS, covered


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


def export_lines(engine: sa.Engine, ns: Namespace, *, subtree: bool = False,
                 as_of: datetime | None = None) -> Iterator[str]:
    """The export of ``ns`` (module doc), line by line."""
    yield _line({"kind": "header", "format": FORMAT, "namespace": ns.path, "subtree": subtree,
                 "as_of": _iso(as_of)})
    with engine.connect() as conn:
        stmt = sa.select(*(memories.c[f] for f in MEMORY_FIELDS)).where(covered(memories.c.namespace, ns, subtree))
        if as_of is not None:
            stmt = stmt.where(memories.c.t_valid_from <= as_of, memories.c.erased_at.is_(None),
                              sa.or_(memories.c.t_valid_to.is_(None), memories.c.t_valid_to > as_of))
        for row in conn.execute(stmt.order_by(memories.c.namespace, memories.c.t_valid_from, memories.c.id)):
            record = dict(row._mapping)
            for field in ("t_valid_from", "t_valid_to", "erased_at"):
                record[field] = _iso(record[field])
            yield _line({"kind": "memory", **record})
        aliases: dict[int, list[str]] = {}
        for entity_id, alias in conn.execute(sa.select(entity_aliases.c.entity_id, entity_aliases.c.alias)):
            aliases.setdefault(entity_id, []).append(alias)
        for row in conn.execute(sa.select(entities.c.id, entities.c.namespace, entities.c.name)
                                .where(covered(entities.c.namespace, ns, subtree))
                                .order_by(entities.c.namespace, entities.c.name)):
            yield _line({"kind": "entity", "namespace": row.namespace, "name": row.name,
                         "aliases": sorted(aliases.get(row.id, []))})
        if as_of is None:  # concepts keep no history: they have no past to export
            for row in conn.execute(sa.select(concepts.c.namespace, concepts.c.path, concepts.c.content)
                                    .where(covered(concepts.c.namespace, ns, subtree))
                                    .order_by(concepts.c.namespace, concepts.c.path)):
                yield _line({"kind": "concept", "namespace": row.namespace, "path": row.path, "content": row.content})
        for row in conn.execute(sa.select(policies.c.namespace, policies.c.policy)
                                .where(covered(policies.c.namespace, ns, subtree)).order_by(policies.c.namespace)):
            yield _line({"kind": "policy", "namespace": row.namespace, "policy": row.policy})
