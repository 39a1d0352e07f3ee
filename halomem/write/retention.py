"""Retention: a namespace's ``ttl`` policy (policy.model) ends its memories' currency.

Present reads leave an expired memory out at once (index.acl.Scope.expired, from
policy.store.expiries); this maintenance step then closes its validity for good, at the instant it
expired (valid-from + ttl), with one audit row per batch naming the ids and the ttl. History and
as-of keep it: retention is not erasure (`erase --chain` is). `halomem maintain` runs it (cron);
`halomem serve` runs it every hour.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from ..db.schema import memories
from ..policy.model import ttl_span
from ..policy.store import effective_of, list_policies
from ..types import Namespace

BATCH = 1000  # rows one transaction closes


def expire(engine: sa.Engine, writer: Any, *, now: datetime | None = None,
           request_id: str | None = None) -> dict[str, int]:
    """Close every live memory a ttl has expired; returns {namespace: rows closed}."""
    now = now or datetime.now(timezone.utc)
    with engine.connect() as conn:
        own = list_policies(conn)
        if not any(p.ttl for p in own):
            return {}
        holding = conn.execute(sa.select(memories.c.namespace).where(
            memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None)).distinct()).scalars().all()
    closed: dict[str, int] = {}
    for name in sorted(holding):
        ns = Namespace(name)
        lineage = ns.lineage()
        ttl = effective_of([p for p in own if p.namespace in lineage]).ttl  # own: by namespace, roots first
        if not ttl:
            continue
        lived = ttl_span(ttl)
        cutoff = now - lived
        while True:
            with engine.connect() as conn:
                ids = conn.execute(sa.select(memories.c.id).where(
                    memories.c.namespace == name, memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None),
                    memories.c.t_valid_from < cutoff).limit(BATCH)).scalars().all()
            if not ids:
                break
            done = writer.retire(ns, ids, reason=f"ttl {ttl}", request_id=request_id, lived=lived)
            closed[name] = closed.get(name, 0) + len(done)
            if not done:
                break
    return closed

