"""Every input bound and the checks that enforce them: one module the kernel, the operations layer,
the server and the CLI import (README "Limits" lists the same numbers).

Text from a caller is refused (InvalidInputError, HTTP 400, exit 3) before it reaches the
database when it holds a NUL (PostgreSQL text cannot) or a lone UTF-16 surrogate (not UTF-8:
JSON's ``"\\ud800"`` decodes to one), or is longer than its bound.
"""
from __future__ import annotations

import unicodedata
from typing import Sequence

from .errors import InvalidInputError
from .types import InvalidNamespace, Namespace

MAX_QUERY_CHARS = 4096
MAX_K = 200
MAX_BUDGET = 1_000_000
MAX_CONTENT_CHARS = 65_536
MAX_SOURCE_CHARS = 200
MAX_SOURCES = 100  # sources one search may be scoped to
MAX_KEY_CHARS = 200  # a keyed memory's key (a document's path, a LangGraph item)
MAX_KEYS = 100  # keys one `recent` page may be scoped to
MAX_ID_CHARS = 100  # a memory id or a token id as a caller names it
MAX_REASON_CHARS = 2000
MAX_ENTITY_NAME_CHARS = 200
MAX_ALIASES = 50  # aliases one entity request may add
MAX_DRIVER_NAME_CHARS = 100
MAX_PAGE = 100  # memories one `recent` page holds
MAX_BATCH = 100  # memories one remember_many call writes
MAX_AS_OF_CHARS = 64  # an instant as text (halomem.instants)
MAX_AUDIT_ROWS = 1000  # audit rows one listing answers (page further with `before`)
MAX_DAYS = 3660  # ten years: the longest window in days (reports, retention) and a token's longest expiry
MAX_NOTE_CHARS = 500  # a feedback note
MAX_CURSOR_CHARS = 200  # a page cursor as the caller passes it back (index.cursors)
MAX_ACTION_CHARS = 40  # an audit action a listing filters by
MAX_ROOT_NAME_CHARS = 100  # a document root's name (intake: keys are ROOT/path)
MAX_RELATIVE_PATH_CHARS = 1000  # a file's path under its root
MAX_FILES = 100_000  # files one ingest reads; a larger tree is refused, naming the limit
MAX_SESSION_CHARS = 100  # a conversation's session name (intake.chat)
MAX_SPEAKER_CHARS = 100  # a turn's speaker or role
MAX_EXTRACT_SESSIONS = 100  # sessions named in one extract request
MAX_LLM_TOKENS_PER_DAY = 10**10  # the largest daily model-token budget a policy may set
AUDITED_REASON_CHARS = 200  # the part of an erasure's reason its audit row keeps


def namespace(value: str | Namespace | None) -> Namespace:
    if isinstance(value, Namespace):
        return value
    if value is None:
        raise InvalidInputError("no namespace: pass --ns or set HALOMEM_NS")
    try:
        return Namespace(value)
    except InvalidNamespace as exc:
        raise InvalidInputError(str(exc)) from None


def check_text(value: object, what: str, max_chars: int, *, allow_empty: bool = False) -> str:
    """``value`` if it is storable text of at most ``max_chars`` characters, else InvalidInputError."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be text")
    if len(value) > max_chars:
        raise InvalidInputError(f"{what} is {len(value)} characters; the limit is {max_chars}")
    if "\x00" in value:
        raise InvalidInputError(f"{what} contains a NUL byte")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{what} contains a lone UTF-16 surrogate (not valid Unicode text)") from None
    if not allow_empty and not value.strip():
        raise InvalidInputError(f"{what} is empty")
    return value


def check_query(query: object) -> str:
    query = check_text(query, "query", MAX_QUERY_CHARS)
    if any(unicodedata.category(ch) == "Cc" and ch not in "\t\n\r" for ch in query):
        raise InvalidInputError("query contains control characters (binary input?)")
    return query


def check_id(value: object, what: str = "memory id") -> str:
    return check_text(value, what, MAX_ID_CHARS)


def check_seq(value: object) -> int:
    """An audit row's sequence number as a caller names it."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise InvalidInputError(f"an audit seq is a positive integer, not {str(value)[:40]!r}")
    return value


def check_sources(sources: Sequence[str] | None) -> tuple[str, ...] | None:
    if sources is None:
        return None
    if isinstance(sources, str) or len(sources) > MAX_SOURCES:
        raise InvalidInputError(f"sources must be a list of at most {MAX_SOURCES} names")
    return tuple(check_text(s, "a source", MAX_SOURCE_CHARS, allow_empty=True) for s in sources)


def check_keys(keys: Sequence[str] | None) -> tuple[str, ...] | None:
    """None (every memory) or at most MAX_KEYS keys, each printable text of MAX_KEY_CHARS or fewer."""
    if keys is None:
        return None
    if isinstance(keys, str) or len(keys) > MAX_KEYS:
        raise InvalidInputError(f"keys must be a list of at most {MAX_KEYS} keys")
    return tuple(check_text(k, "a key", MAX_KEY_CHARS) for k in keys)


def check_search_bounds(k: object, token_budget: object) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidInputError(f"k must be a whole number between 1 and {MAX_K}")
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or not 1 <= token_budget <= MAX_BUDGET:
        raise InvalidInputError(f"token budget must be a whole number between 1 and {MAX_BUDGET}")


def check_page(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit must be a whole number between 1 and {MAX_PAGE}")
    return limit


def check_entity_names(name: object, aliases: Sequence[object]) -> list[str]:
    """The entity's name and aliases, stripped; at most MAX_ALIASES aliases a request."""
    if isinstance(aliases, str) or len(aliases) > MAX_ALIASES:
        raise InvalidInputError(f"an entity request takes at most {MAX_ALIASES} aliases")
    return [check_text(n, "an entity name or alias", MAX_ENTITY_NAME_CHARS).strip() for n in (name, *aliases)]
