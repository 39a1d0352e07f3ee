"""Reading policies: each facet of a namespace's policy is its own, else its nearest ancestor's that
sets it, else halomem's default (policy.model)."""
from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import policies
from ..index import Scope, visible
from ..types import Namespace
from .model import DEFAULT_POLICY, Policy, parse_policy, ttl_span


def lineage_policies(conn: Connection, ns: Namespace) -> list[Policy]:
    """The own policies of ``ns``'s lineage, root first (one statement)."""
    rows = conn.execute(sa.select(policies.c.namespace, policies.c.policy).where(visible(policies, Scope(ns)))
                        .order_by(sa.func.length(policies.c.namespace))).all()
    return [parse_policy(row.policy, row.namespace) for row in rows]


def effective_of(own: list[Policy]) -> Policy:
    """The effective policy of the lineage whose own policies are ``own`` (root first): nearer facets
    override farther ones."""
    effective = DEFAULT_POLICY
    for policy in own:
        effective = effective.merged(policy, policy.namespace or "")
    return effective


def effective_policy(conn: Connection, ns: Namespace) -> Policy:
    return effective_of(lineage_policies(conn, ns))


def expiries(own: list[Policy], ns: Namespace, now: datetime) -> tuple[tuple[str, datetime], ...]:
    """(namespace, instant) for each namespace of ``ns``'s lineage with a ttl in effect there (its
    effective policy's, the one inheritance rule: Policy.merged): its memories valid from before the
    instant have expired (index.acl.Scope.expired). ``own``: the lineage's own policies, root first."""
    out = []
    for name in ns.lineage():
        above = Namespace(name).lineage()
        ttl = effective_of([p for p in own if p.namespace in above]).ttl
        if ttl:
            out.append((name, now - ttl_span(ttl)))
    return tuple(out)


def own_policy(conn: Connection, ns: Namespace) -> dict | None:
    """The facets ``ns`` sets itself (None: it sets none)."""
    return conn.execute(sa.select(policies.c.policy).where(policies.c.namespace == ns.path)).scalar()


def list_policies(conn: Connection) -> list[Policy]:
    rows = conn.execute(sa.select(policies.c.namespace, policies.c.policy).order_by(policies.c.namespace))
    return [parse_policy(r.policy, r.namespace) for r in rows]
