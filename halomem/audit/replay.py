"""`audit replay SEQ`: what a recorded search returned, and what the same question returns now as of
the instant it was asked.

The search's chain row holds everything but the query text: its driver and version, k, budget, embedder,
sources, as-of time and refs (audit.seen). The text is kept beside the chain, salted and erasable;
once retention or an erasure has removed it the search cannot be replayed, and replay says so
rather than guessing. The re-run reads through the same ScopedView as any search (as-of, so rows
written or erased since stay out, and erased rows at every instant); it is audited as a ``replay``
row, never as a search anyone was handed.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import audit_log, search_queries
from ..errors import ConflictError, IntegrityError, NotFoundError
from ..index.acl import in_subtree
from ..results import Replay, ReplayedRef, SearchResult
from .seen import query_digest


@dataclass(frozen=True)
class Recorded:
    """One search as its audit row and kept query text describe it."""

    seq: int
    namespace: str
    at: datetime
    as_of: datetime  # the search's own as-of instant, else when it ran
    query: str
    driver: str  # the driver that served it
    driver_version: str  # as the registry knew it then ("" in rows older than the field)
    embedder: str
    k: int
    budget: int
    sources: tuple[str, ...] | None
    refs: list[ReplayedRef]


def recorded(conn: Connection, seq: int, subtree: str | None) -> Recorded:
    """The search at ``seq``; with ``subtree`` only one made there or below (an admin's reach): any
    other seq is "no search", whether or not it exists."""
    where = [audit_log.c.seq == seq, audit_log.c.action == "search"]
    if subtree is not None:
        where.append(in_subtree(audit_log.c.actor_ns, subtree))
    row = conn.execute(sa.select(audit_log.c.at, audit_log.c.actor_ns, audit_log.c.fields).where(*where)).first()
    if row is None or row.fields.get("outcome") != "ok":
        raise NotFoundError(f"no search recorded at audit seq {seq}" + (f" in {subtree} or below" if subtree else ""))
    f = row.fields
    kept = conn.execute(sa.select(search_queries.c.salt, search_queries.c.query)
                        .where(search_queries.c.seq == seq)).first()
    if kept is None:
        raise NotFoundError(f"search {seq}'s query text is no longer kept (pruned after its retention, or forgotten"
                            " when a memory it was returned was erased): its refs are still in the audit row")
    if query_digest(kept.salt, kept.query) != f.get("query"):
        raise IntegrityError(f"search {seq}'s kept query text does not match the digest in its audit row")
    try:
        as_of = datetime.fromisoformat(f["as_of"]) if f.get("as_of") else row.at
        sources = tuple(str(s) for s in f["sources"]) if f.get("sources") is not None else None
        refs = [ReplayedRef(int(rank), str(tier), str(ref), float(score)) for rank, tier, ref, score in f.get("refs", [])]
        return Recorded(seq, row.actor_ns, row.at, as_of, kept.query, str(f.get("driver", "baseline")),
                        str(f.get("driver_version", "")), str(f.get("embedder", "-")),
                        int(f.get("k", 10)), int(f.get("budget", 2000)), sources, refs)
    except (TypeError, ValueError):  # a row from before v13 whose text the migration could not read whole
        raise ConflictError(f"search {seq}'s audit row predates typed records and its fields cannot be read:"
                            " it cannot be replayed") from None


def compare(then: Recorded, now: SearchResult, *, embedder_now: str, mounted: bool, driver_version_now: str,
            erased: Iterable[str]) -> Replay:
    """The replay's answer beside the recorded one, with the reasons halomem can name."""
    replayed = [ReplayedRef(h.rank, h.tier, h.ref, round(h.score, 4)) for h in now.hits]
    reasons = []
    if not mounted:
        reasons.append(f"driver {then.driver} is not mounted now: replayed with {now.driver}")
    elif now.fallback:
        reasons.append(f"driver {then.driver} fell back to {now.driver} on replay")
    elif then.driver_version and driver_version_now != then.driver_version:
        reasons.append(f"driver {then.driver} changed: version {then.driver_version} then, {driver_version_now} now")
    if embedder_now != then.embedder:
        reasons.append(f"embedder changed: {then.embedder} then, {embedder_now} now")
    still = {r.ref for r in replayed}
    gone = set(erased)
    for ref in (r for r in then.refs if r.ref not in still):
        if ref.tier == "L3":
            reasons.append(f"{ref.ref}: concepts keep no history, an as-of search cannot return them")
        elif ref.ref in gone:
            reasons.append(f"{ref.ref}: erased since")
    return Replay(then.seq, then.namespace, then.at.isoformat(), then.as_of.isoformat(), then.driver, now.driver,
                  then.embedder, embedder_now, then.refs, replayed, reasons, now.request_id)
