"""Reading policies: each facet of a namespace's policy is its own, else its nearest ancestor's that
sets it, else halomem's default (policy.model)."""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.schema import policies
from ..index import Scope, visible
from ..types import Namespace
from .model import DEFAULT_POLICY, Policy, parse_policy


def effective_policy(conn: Connection, ns: Namespace) -> Policy:
    """One statement reads the lineage's own policies; nearer facets override farther ones."""
    rows = conn.execute(sa.select(policies.c.namespace, policies.c.policy).where(visible(policies, Scope(ns)))
                        .order_by(sa.func.length(policies.c.namespace))).all()
    effective = DEFAULT_POLICY
    for row in rows:
        effective = effective.merged(parse_policy(row.policy, row.namespace), row.namespace)
    return effective


def own_policy(conn: Connection, ns: Namespace) -> dict | None:
    """The facets ``ns`` sets itself (None: it sets none)."""
    return conn.execute(sa.select(policies.c.policy).where(policies.c.namespace == ns.path)).scalar()


def list_policies(conn: Connection) -> list[Policy]:
    rows = conn.execute(sa.select(policies.c.namespace, policies.c.policy).order_by(policies.c.namespace))
    return [parse_policy(r.policy, r.namespace) for r in rows]
