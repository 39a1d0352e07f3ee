"""Who is asking, and the one authorization decision every transport calls.

- read: the ACL of the caller's namespace (its lineage: itself and its ancestors), unchanged;
- write: only into the caller's own namespace; an ancestor's rows are read-only to it;
- admin on N: policies, tokens and the audit trail of N and its descendants.

A request never names its caller namespace: a principal's comes from its token, the local
operator's from ``--ns`` (local trust: whoever owns the data dir may act as any namespace).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import PermissionDeniedError
from ..types import Namespace

READ, WRITE, ADMIN = "read", "write", "admin"
SCOPES = (READ, WRITE, ADMIN)


@dataclass(frozen=True)
class Caller:
    namespace: Namespace
    scopes: frozenset[str]
    principal_id: str | None = None  # None: the local operator
    name: str = "operator"
    # whose fair share (rate, requests in flight) this caller's requests take: the root of the lineage
    # its token was minted in, so minting child tokens never multiplies a principal's share
    share: str | None = None

    @property
    def share_key(self) -> str | None:
        return self.share or self.principal_id

    @classmethod
    def operator(cls, namespace: Namespace) -> "Caller":
        return cls(namespace, frozenset(SCOPES))

    @property
    def label(self) -> str:
        return f"principal {self.principal_id} ({self.name})" if self.principal_id else "the local operator"


def within(namespace: Namespace | str, root: Namespace | str) -> bool:
    """``namespace`` is ``root`` or one of its descendants (segment-wise: acme-eng is not in acme)."""
    ns, top = str(namespace), str(root)
    return ns == top or ns.startswith(top + "/")


def readable(namespace: Namespace, wanted: str | Namespace) -> Namespace:
    """``wanted`` when ``namespace`` reads it (itself or an ancestor: the read ACL's lineage), else
    PermissionDeniedError; a malformed one is InvalidInputError."""
    from ..limits import namespace as parsed

    target = parsed(wanted)
    if target.path not in namespace.lineage():
        raise PermissionDeniedError(f"{namespace} reads itself and its ancestors, not {target}")
    return target


def may_judge(caller: Caller, search_principal: str | None, search_namespace: str) -> bool:
    """Whether ``caller`` may give feedback on what a search returned: the principal that was
    handed it, or an admin over the namespace it searched from (the local operator of that
    namespace or an ancestor, by local trust)."""
    if caller.principal_id is not None and caller.principal_id == search_principal:
        return True
    return ADMIN in caller.scopes and within(search_namespace, caller.namespace)


def authorize(caller: Caller, right: str, target: Namespace | None = None) -> Namespace:
    """The namespace the request acts on, or PermissionDeniedError.

    ``target`` defaults to the caller's own namespace. Reads are always the caller's own lineage
    (the ACL narrows them further); writes must target the caller's namespace exactly; admin may
    target the caller's namespace or a descendant.
    """
    if right not in SCOPES:
        raise ValueError(f"unknown right {right!r}")
    if right not in caller.scopes:
        raise PermissionDeniedError(f"{caller.label} lacks the {right!r} scope")
    target = target or caller.namespace
    if right == READ and target != caller.namespace:
        raise PermissionDeniedError(f"{caller.label} reads only from {caller.namespace}")
    if right == WRITE and target != caller.namespace:
        raise PermissionDeniedError(f"{caller.label} may write only into {caller.namespace}")
    if right == ADMIN and not within(target, caller.namespace):
        raise PermissionDeniedError(f"{caller.label} administers only {caller.namespace} and below")
    return target
