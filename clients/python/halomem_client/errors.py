"""One error root. Each subclass carries its CLI exit code, HTTP status and problem type: the one
mapping every transport uses (the CLI's exit codes, the API's problem+json, the client's raise)."""
from __future__ import annotations


class HalomemError(Exception):
    exit_code = 1
    kind = "error"
    http_status = 500
    slug = "internal-error"


class InvalidInputError(HalomemError):
    """Malformed namespace, query, option or policy."""

    exit_code = 3
    kind = "invalid input"
    http_status = 400
    slug = "invalid-input"


class SchemaMismatchError(InvalidInputError):
    """An HTTP body or parameter that does not fit the route's schema (422, same problem type)."""

    http_status = 422


class PayloadTooLargeError(InvalidInputError):
    """A request body over the server's limit."""

    kind = "payload too large"
    http_status = 413
    slug = "payload-too-large"


class MethodNotAllowedError(InvalidInputError):
    """An HTTP method a route does not serve; ``allow``: the methods it does (the Allow header)."""

    kind = "method not allowed"
    http_status = 405
    slug = "method-not-allowed"

    def __init__(self, message: str, allow: str | None = None) -> None:
        super().__init__(message)
        self.allow = allow


class NotFoundError(HalomemError):
    exit_code = 4
    kind = "not found"
    http_status = 404
    slug = "not-found"


class ConflictError(HalomemError):
    """A write lost a race (e.g. superseding a row that is no longer the chain's head)."""

    exit_code = 5
    kind = "conflict"
    http_status = 409
    slug = "conflict"


class DriverError(HalomemError):
    """Unknown driver, a driver that cannot be loaded, or a driver that failed a request."""

    exit_code = 6
    kind = "driver error"
    http_status = 502
    slug = "driver-error"


class DatabaseUnavailableError(HalomemError):
    exit_code = 7
    kind = "database unavailable"
    http_status = 503
    slug = "database-unavailable"


class ServiceUnreachableError(HalomemError):
    """The halomem server a client talks to did not answer, or is not a halomem server (the
    client's side; the server's own database being away is DatabaseUnavailableError)."""

    exit_code = 15
    kind = "server unreachable"
    http_status = 503
    slug = "server-unreachable"


class EmbedderUnavailableError(HalomemError):
    """The embedding service did not answer usefully after its retries (refused, timed out, 5xx, 429)."""

    exit_code = 16
    kind = "embedder unavailable"
    http_status = 503
    slug = "embedder-unavailable"


class ConfigError(HalomemError):
    """Bad settings, a foreign data dir, or an embedder that does not match stored vectors."""

    exit_code = 8
    kind = "configuration error"
    http_status = 500
    slug = "configuration-error"


class IntegrityError(HalomemError):
    """The audit chain does not verify."""

    exit_code = 9
    kind = "integrity error"
    http_status = 500
    slug = "integrity-error"


class ConformanceFailed(HalomemError):
    exit_code = 10
    kind = "conformance failed"
    http_status = 500
    slug = "conformance-failed"


class IngestError(HalomemError):
    """A bulk ingest file that cannot be read or has a bad line."""

    exit_code = 11
    kind = "ingest error"
    http_status = 422
    slug = "ingest-error"


class AuthenticationError(HalomemError):
    """A missing, malformed, unknown, revoked or expired token. Never echoes the token."""

    exit_code = 12
    kind = "unauthenticated"
    http_status = 401
    slug = "unauthenticated"


class PermissionDeniedError(HalomemError):
    """The principal is known but the request is outside its rights."""

    exit_code = 13
    kind = "permission denied"
    http_status = 403
    slug = "permission-denied"


class RateLimitedError(HalomemError):
    """Too many requests from one principal; ``retry_after`` is in seconds."""

    exit_code = 14
    kind = "rate limited"
    http_status = 429
    slug = "rate-limited"

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


ERROR_CLASSES: tuple[type[HalomemError], ...] = (
    InvalidInputError, PayloadTooLargeError, MethodNotAllowedError, NotFoundError, ConflictError, DriverError,
    DatabaseUnavailableError,
    ConfigError, IntegrityError, ConformanceFailed, IngestError, AuthenticationError, PermissionDeniedError,
    RateLimitedError, ServiceUnreachableError, EmbedderUnavailableError,
)
BY_SLUG: dict[str, type[HalomemError]] = {cls.slug: cls for cls in ERROR_CLASSES}
PROBLEM_TYPE_PREFIX = "urn:halomem:problem:"

# not an error: `audit replay` ran, and its answer differs from the recorded one
REPLAY_DIFFERS_EXIT = 17
# not an error: `eval --fail-if-worse D` ran, and D is significantly worse than baseline
EVAL_WORSE_EXIT = 18
# not an error: the turns were stored, but some sessions' extraction failed (`halomem extract --retry`)
EXTRACTION_FAILED_EXIT = 19

EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "internal error (a bug: rerun with HALOMEM_DEBUG=1 for the traceback)",
    2: "usage error (unknown command or option)",
    **{cls.exit_code: cls.kind for cls in ERROR_CLASSES if cls not in (PayloadTooLargeError, MethodNotAllowedError)},
    REPLAY_DIFFERS_EXIT: "audit replay: the search answers differently now (the diff is printed)",
    EVAL_WORSE_EXIT: "eval --fail-if-worse: that driver is significantly worse than baseline",
    EXTRACTION_FAILED_EXIT: "ingest --extract, extract: some sessions' extraction failed (their turns are stored; "
                            "halomem extract --retry)",
    130: "interrupted (Ctrl-C)",
    143: "stopped by SIGTERM (after a clean shutdown)",
}


def error_for_problem(status: int, slug: str | None, detail: str) -> HalomemError:
    """The error a problem+json body stands for (the client's side of the mapping)."""
    cls = BY_SLUG.get(slug or "")
    if cls is None:
        cls = next((c for c in ERROR_CLASSES if c.http_status == status), HalomemError)
    return cls(detail)
