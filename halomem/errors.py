"""One error root; each subclass carries the CLI exit code documented in the README."""
from __future__ import annotations


class HalomemError(Exception):
    exit_code = 1
    kind = "error"


class InvalidInputError(HalomemError):
    """Malformed namespace, query, option or policy."""

    exit_code = 3
    kind = "invalid input"


class NotFoundError(HalomemError):
    exit_code = 4
    kind = "not found"


class ConflictError(HalomemError):
    """A write lost a race (e.g. superseding a row that is no longer the chain's head)."""

    exit_code = 5
    kind = "conflict"


class DriverError(HalomemError):
    """Unknown driver, a driver that cannot be loaded, or a driver that failed a request."""

    exit_code = 6
    kind = "driver error"


class DatabaseUnavailableError(HalomemError):
    exit_code = 7
    kind = "database unavailable"


class ConfigError(HalomemError):
    """Bad settings, a foreign data dir, or an embedder that does not match stored vectors."""

    exit_code = 8
    kind = "configuration error"


class IntegrityError(HalomemError):
    """The audit chain does not verify."""

    exit_code = 9
    kind = "integrity error"


class ConformanceFailed(HalomemError):
    exit_code = 10
    kind = "conformance failed"


class IngestError(HalomemError):
    """A bulk ingest file that cannot be read or has a bad line."""

    exit_code = 11
    kind = "ingest error"


EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "internal error (a bug: rerun with HALOMEM_DEBUG=1 for the traceback)",
    2: "usage error (unknown command or option)",
    **{cls.exit_code: cls.kind for cls in (
        InvalidInputError, NotFoundError, ConflictError, DriverError, DatabaseUnavailableError,
        ConfigError, IntegrityError, ConformanceFailed, IngestError,
    )},
}
