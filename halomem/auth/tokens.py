"""Bearer tokens: ``hm_<id>_<secret>``.

The ``hm_`` prefix lets secret scanners find a leaked token. The secret is 256 random bits; the
database keeps only its SHA-256 (a slow hash buys nothing against 256 bits of entropy), and the
comparison is constant-time. Nothing here ever formats a secret into a message.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from ..errors import AuthenticationError

PREFIX = "hm_"
_ID = re.compile(r"^[0-9a-f]{16}$")
_SECRET = re.compile(r"^[A-Za-z0-9_-]{43}$")


@dataclass(frozen=True, repr=False)
class TokenParts:
    principal_id: str
    secret: str

    def __repr__(self) -> str:  # never the secret, even in a traceback's locals
        return f"TokenParts(principal_id={self.principal_id!r}, secret=<hidden>)"


def new_principal_id() -> str:
    return secrets.token_hex(8)


def new_secret() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode("ascii")


def format_token(principal_id: str, secret: str) -> str:
    return f"{PREFIX}{principal_id}_{secret}"


def parse_token(token: object) -> TokenParts:
    """Split a presented token; a malformed one is an AuthenticationError that does not quote it."""
    if not isinstance(token, str) or not token.startswith(PREFIX):
        raise AuthenticationError("malformed token (expected hm_<id>_<secret>)")
    principal_id, _, secret = token[len(PREFIX):].partition("_")
    if not _ID.match(principal_id) or not _SECRET.match(secret):
        raise AuthenticationError("malformed token (expected hm_<id>_<secret>)")
    return TokenParts(principal_id, secret)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def secret_matches(secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), stored_hash)
