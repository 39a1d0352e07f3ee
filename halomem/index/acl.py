"""The one implementation of the read ACL.

A caller in ``acme/eng`` reads rows of ``acme/eng`` and its ancestors (``acme``): never siblings,
never descendants. Memory rows must also be valid (now, or at the request's ``as_of`` instant) and
not erased, and, when the request is scoped to sources, come from one of them; a present read
leaves out the memories a ttl policy has expired. Erasure wins over
history: an erased row is admitted at no instant.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

import sqlalchemy as sa

from ..types import Namespace


@dataclass(frozen=True)
class Scope:
    namespace: Namespace
    sources: tuple[str, ...] | None = None
    as_of: datetime | None = None  # the store as it stood then (None: now)
    # (namespace, instant): a present read leaves out that namespace's memories valid from before the
    # instant (its ttl policy, policy.store.expiries); maintenance later closes them
    expired: tuple[tuple[str, datetime], ...] = ()

    @property
    def source_scoped(self) -> bool:
        return self.sources is not None


# tables whose rows are rewritten in place, with no validity times: they have no past to show
HISTORYLESS = frozenset({"concepts"})


def in_subtree(column: sa.ColumnElement[str], root: Namespace | str) -> sa.ColumnElement[bool]:
    """``column`` is ``root`` or one of its descendants: the admin rule and the reach of an entity.

    ``starts_with`` rather than LIKE: a namespace may hold '_', which LIKE would read as a wildcard.
    """
    path = str(root)
    return sa.or_(column == path, sa.func.starts_with(column, path + "/"))


def visible(table: sa.Table, scope: Scope, *, live: bool = True,
            within: str | Sequence[str] | None = None) -> sa.ColumnElement[bool]:
    """WHERE clause admitting exactly the rows of ``table`` that ``scope`` may read.

    ``live=False`` keeps superseded and erased rows (for history views), never other namespaces.
    With ``scope.as_of`` a live read admits the rows valid at that instant; tables that keep no
    history (concepts: ``HISTORYLESS``) admit nothing then, rather than today's rows as yesterday's.
    ``within`` narrows to some namespaces of the lineage; those outside it admit nothing. The
    narrowing replaces the lineage list rather than being ANDed onto it: the planner would count
    both and underestimate the rows (picking sort-everything plans over index-order walks), and a
    single ``namespace = X`` is what lets it use that namespace's own partial indexes.
    """
    lineage = scope.namespace.lineage()
    if within is not None:
        wanted = {within} if isinstance(within, str) else set(within)
        lineage = [ns for ns in lineage if ns in wanted]
        if not lineage:
            return sa.false()
    namespace = table.c.namespace == lineage[0] if len(lineage) == 1 else table.c.namespace.in_(lineage)
    clauses: list[sa.ColumnElement[bool]] = [namespace]
    if live and scope.as_of is not None:
        if table.name in HISTORYLESS:  # the caller's predicate kept: every read names its namespaces
            return sa.and_(namespace, sa.literal_column("false", sa.Boolean))
        if "t_valid_to" in table.c:
            clauses += [table.c.t_valid_from <= scope.as_of,
                        sa.or_(table.c.t_valid_to.is_(None), table.c.t_valid_to > scope.as_of),
                        table.c.erased_at.is_(None)]
    elif live and "t_valid_to" in table.c:
        clauses += [table.c.t_valid_to.is_(None), table.c.erased_at.is_(None)]
        clauses += [sa.or_(table.c.namespace != name, table.c.t_valid_from >= cutoff)
                    for name, cutoff in scope.expired if name in lineage]
    if scope.sources is not None and "source" in table.c:
        clauses.append(table.c.source.in_(scope.sources))
    return sa.and_(*clauses)


def mentionable(table: sa.Table, entity_namespace: Namespace) -> sa.ColumnElement[bool]:
    """The live rows an entity of ``entity_namespace`` may be linked to (mentions): the rows that can
    see the entity, i.e. of its namespace and its descendants (the write path links a new row to
    the entities of its lineage, the same relation from the other side).

    What the registering caller is *told* about linking is only the part it may read:
    ``visible(Scope(entity_namespace))`` AND ``mentionable`` = the rows of its own namespace.
    Descendants' rows are linked too (their callers see the entity), but neither counted nor
    otherwise reported, so registration is no oracle into rows the caller cannot read.
    """
    return sa.and_(in_subtree(table.c.namespace, entity_namespace),
                   table.c.t_valid_to.is_(None), table.c.erased_at.is_(None))
