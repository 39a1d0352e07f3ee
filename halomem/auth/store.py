"""Principals in the database: create (the token is shown once), list, revoke, authenticate.

Authentication reads the principal's row on every request, so a revocation or an expiry takes
effect on the next request, whichever server process answers it.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Iterable, Sequence

import sqlalchemy as sa

from .. import audit
from ..db.schema import principals
from ..index.acl import in_subtree
from ..errors import AuthenticationError, InvalidInputError, NotFoundError, PermissionDeniedError
from ..types import Namespace
from .principal import IssuedToken, Principal, parse_duration  # noqa: F401 - re-exported: the store's answers
from .rights import SCOPES, within
from .tokens import format_token, hash_secret, new_principal_id, new_secret, parse_token, secret_matches

MAX_NAME = 100


def parse_scopes(value: str | Iterable[str]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    scopes = tuple(dict.fromkeys(s.strip().lower() for s in items if s.strip()))
    bad = [s for s in scopes if s not in SCOPES]
    if not scopes or bad:
        raise InvalidInputError(f"scopes must be a non-empty subset of {','.join(SCOPES)}"
                                + (f" (not {', '.join(repr(b) for b in bad)})" if bad else ""))
    return tuple(s for s in SCOPES if s in scopes)


# the principal at the top of :id's minting lineage (bounded: lineages are short, a cycle cannot form)
_LINEAGE_ROOT = sa.text(
    "WITH RECURSIVE up(id, created_by, depth) AS (SELECT id, created_by, 0 FROM principals WHERE id = :id"
    " UNION ALL SELECT p.id, p.created_by, up.depth + 1 FROM principals p JOIN up ON p.id = up.created_by"
    " WHERE up.depth < 64) SELECT id FROM up ORDER BY depth DESC LIMIT 1")
_ROOTS_REMEMBERED = 100_000


# every token minted from :root, at any depth, not yet revoked: revoked with it (one statement, so a
# mint that committed before it began is seen; a mint racing it waits on the root's row lock)
_LINEAGE_REVOKE = sa.text(
    "WITH RECURSIVE lineage(id) AS (SELECT id FROM principals WHERE created_by = :root"
    " UNION SELECT p.id FROM principals p JOIN lineage l ON p.created_by = l.id)"
    " UPDATE principals SET revoked_at = now() WHERE id IN (SELECT id FROM lineage) AND revoked_at IS NULL"
    " RETURNING id, namespace, created_by")


def _principal(row: sa.Row) -> Principal:
    return Principal(row.id, row.name, row.namespace, tuple(row.scopes.split(",")), row.created_at,
                     row.expires_at, row.revoked_at, row.created_by)


class PrincipalStore:
    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self._roots: dict[str, str] = {}  # principal -> the root of its lineage (lineage_root)

    def create(self, namespace: Namespace, name: str, scopes: Iterable[str] | str, *,
               expires_in: timedelta | None = None, request_id: str, maker: str | None = None) -> IssuedToken:
        """Mint a token for ``namespace``. ``maker`` is the principal whose token asks (None: the local
        operator): the new token never holds a scope its maker lacks nor outlives it (no expiry asked
        means the maker's), and revoking the maker revokes it (``revoke`` follows ``created_by``)."""
        name = (name or "").strip()
        if not name or len(name) > MAX_NAME or any(ord(c) < 32 or ord(c) == 127 for c in name):
            raise InvalidInputError(f"token name must be 1-{MAX_NAME} printable characters")
        scope_list = parse_scopes(scopes)
        principal_id, secret = new_principal_id(), new_secret()
        now = datetime.now(timezone.utc)
        expires_at = now + expires_in if expires_in else None
        with self.engine.begin() as conn:
            if maker is not None:
                expires_at = self._within_maker(conn, maker, scope_list, expires_at, now)
            row = conn.execute(principals.insert().values(
                id=principal_id, name=name, namespace=namespace.path, scopes=",".join(scope_list),
                secret_hash=hash_secret(secret), expires_at=expires_at, created_by=maker)
                .returning(*principals.c)).one()
            audit.append(conn, namespace.path, "token",
                         {"outcome": "created", "id": principal_id, "scopes": list(scope_list),
                          "expires": expires_at.isoformat() if expires_at else None}, request_id)
        return IssuedToken(_principal(row), format_token(principal_id, secret))

    @staticmethod
    def _within_maker(conn: sa.Connection, maker: str, scopes: Sequence[str], expires_at: datetime | None,
                      now: datetime) -> datetime | None:
        """The expiry a token minted by ``maker`` gets, or an error if it would exceed its maker.

        The maker's row is locked (FOR SHARE) until the new row commits: a revocation racing with
        the mint either waits for it and then revokes the new token too, or wins and the mint fails."""
        row = conn.execute(sa.select(principals).where(principals.c.id == maker).with_for_update(read=True)).first()
        parent = _principal(row) if row else None
        if parent is None or parent.status(now) != "active":
            raise AuthenticationError(f"token {maker} is no longer active")
        extra = [s for s in scopes if s not in parent.scopes]
        if extra:
            raise PermissionDeniedError(f"a token may mint only scopes it holds itself ({','.join(parent.scopes)});"
                                        f" not {','.join(extra)}")
        if parent.expires_at is not None:
            if expires_at is not None and expires_at > parent.expires_at:
                raise InvalidInputError(f"the new token would outlive the token minting it, which expires"
                                        f" {parent.expires_at:%Y-%m-%d %H:%M:%S} UTC")
            expires_at = expires_at or parent.expires_at
        return expires_at

    def list(self, subtree: Namespace | None = None) -> list[Principal]:
        stmt = sa.select(principals).order_by(principals.c.namespace, principals.c.created_at)
        if subtree is not None:
            stmt = stmt.where(in_subtree(principals.c.namespace, subtree))
        with self.engine.connect() as conn:
            return [_principal(r) for r in conn.execute(stmt)]

    def get(self, principal_id: str) -> Principal | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(principals).where(principals.c.id == principal_id)).first()
        return _principal(row) if row else None

    def revoke(self, principal_id: str, *, subtree: Namespace | None = None, request_id: str) -> Principal:
        """Revoke a token and every token minted from it, down the lineage (idempotent);
        ``subtree`` limits an admin principal to its own namespaces."""
        current = self.get(principal_id)
        if current is None or (subtree is not None and not within(current.namespace, subtree)):
            raise NotFoundError(f"no token {principal_id!r}" + (f" under {subtree}" if subtree else ""))
        with self.engine.begin() as conn:
            row = conn.execute(sa.update(principals).where(principals.c.id == principal_id)
                               .values(revoked_at=sa.func.coalesce(principals.c.revoked_at, sa.func.now()))
                               .returning(*principals.c)).one()
            audit.append(conn, row.namespace, "token", {"outcome": "revoked", "id": principal_id}, request_id)
            for child in conn.execute(_LINEAGE_REVOKE, {"root": principal_id}):
                audit.append(conn, child.namespace, "token",
                             {"outcome": "revoked", "id": child.id, "minted_by": child.created_by}, request_id)
        return _principal(row)

    def lineage_root(self, principal: Principal) -> str:
        """The principal at the root of ``principal``'s minting lineage (the one the local operator
        minted): its children share its fair share. Remembered per principal: a lineage never changes."""
        if principal.created_by is None:
            return principal.id
        root = self._roots.get(principal.id)
        if root is None:
            with self.engine.connect() as conn:
                root = conn.execute(_LINEAGE_ROOT, {"id": principal.id}).scalar() or principal.id
            if len(self._roots) >= _ROOTS_REMEMBERED:
                self._roots.clear()
            self._roots[principal.id] = root
        return root

    def authenticate(self, token: object) -> Principal:
        """The live principal a presented token stands for, else AuthenticationError (never quoting it)."""
        parts = parse_token(token)
        principal = None
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(principals).where(principals.c.id == parts.principal_id)).first()
        # hash and compare even when the id is unknown, so timing does not tell ids apart
        if not secret_matches(parts.secret, row.secret_hash if row else "0" * 64) or row is None:
            raise AuthenticationError("unknown token or wrong secret")
        principal = _principal(row)
        status = principal.status()
        if status != "active":
            raise AuthenticationError(f"token {principal.id} " + ("was revoked" if status == "revoked" else "expired"))
        return principal
