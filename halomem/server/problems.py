"""RFC 9457 problem+json from the one error tree (halomem.errors): the API's only error mapping.

Never a traceback, SQL or a secret: an unexpected exception becomes a bare 500 that names the
request id, and its traceback goes to the server log.
"""
from __future__ import annotations

import logging
from typing import Any

from starlette.responses import JSONResponse

from ..errors import PROBLEM_TYPE_PREFIX, DatabaseUnavailableError, HalomemError, RateLimitedError

log = logging.getLogger("halomem.server")
PROBLEM_MEDIA_TYPE = "application/problem+json"


def printable(text: str) -> str:
    """``text`` as valid UTF-8: a message quoting a caller's lone surrogate shows it escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def problem(status: int, slug: str, title: str, detail: str, *, exit_code: int,
            request_id: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"type": PROBLEM_TYPE_PREFIX + slug, "title": title, "status": status,
                            "detail": printable(detail), "kind": slug, "exit_code": exit_code}
    if request_id:
        body["request_id"] = request_id
    return JSONResponse(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


def from_error(exc: HalomemError, request_id: str | None = None) -> JSONResponse:
    headers = {}
    if isinstance(exc, RateLimitedError):
        headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    if exc.http_status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="halomem"'
    if getattr(exc, "allow", None):
        headers["Allow"] = exc.allow
    first_line = (str(exc).strip().splitlines() or [exc.kind])[0]
    return problem(exc.http_status, exc.slug, exc.kind, first_line, exit_code=exc.exit_code,
                   request_id=request_id, headers=headers)


def from_unexpected(exc: BaseException, request_id: str | None = None) -> JSONResponse:
    """A bug or an outage: the client learns which, never the details."""
    from sqlalchemy.exc import DBAPIError, OperationalError

    if isinstance(exc, OperationalError) or (isinstance(exc, DBAPIError) and exc.connection_invalidated):
        log.warning("database unavailable: %s", type(exc).__name__)
        return from_error(DatabaseUnavailableError("the database did not answer"), request_id)
    log.error("internal error (request %s)", request_id or "-", exc_info=exc)
    return problem(500, "internal-error", "internal error",
                   f"internal error; the server log has the details (request {request_id or '-'})",
                   exit_code=1, request_id=request_id)
