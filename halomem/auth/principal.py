"""A principal (a token's holder) and a freshly issued token, as data: what the store answers and
what the CLI's remote mode rebuilds from the server's JSON, without the database stack."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ..instants import parse_span
from ..limits import MAX_DAYS
from ..types import Namespace
from .rights import Caller

MAX_EXPIRY = timedelta(days=MAX_DAYS)  # ten years: a token is no archive


def parse_duration(value: object) -> timedelta:
    """A token's expiry as a caller gives it (instants.parse_span)."""
    return parse_span(value, what="expiry", limit=MAX_EXPIRY)


@dataclass(frozen=True)
class Principal:
    id: str
    name: str
    namespace: str
    scopes: tuple[str, ...]
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    created_by: str | None = None  # the minting principal; None: the local operator

    def status(self, now: datetime | None = None) -> str:
        """active, revoked or expired: what the server would make of this token now."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= (now or datetime.now(timezone.utc)):
            return "expired"
        return "active"

    def public(self) -> dict[str, Any]:
        """Everything about a token but its secret (which is not kept anyway)."""
        return {"id": self.id, "name": self.name, "namespace": self.namespace, "scopes": list(self.scopes),
                "created_at": self.created_at, "expires_at": self.expires_at, "revoked_at": self.revoked_at,
                "created_by": self.created_by, "status": self.status()}

    @classmethod
    def from_public(cls, data: dict[str, Any]) -> "Principal":
        """A principal from its ``public()`` JSON (the REST API's TokenJSON)."""
        when = {k: datetime.fromisoformat(data[k]) if data.get(k) else None
                for k in ("created_at", "expires_at", "revoked_at")}
        return cls(data["id"], data["name"], data["namespace"], tuple(data["scopes"]), when["created_at"],
                   when["expires_at"], when["revoked_at"], data.get("created_by"))

    def caller(self, share: str | None = None) -> Caller:
        return Caller(Namespace(self.namespace), frozenset(self.scopes), self.id, self.name, share or self.id)


@dataclass(frozen=True, repr=False)
class IssuedToken:
    principal: Principal
    token: str  # shown once; never stored

    def __repr__(self) -> str:
        return f"IssuedToken(principal={self.principal!r}, token=<hidden>)"
