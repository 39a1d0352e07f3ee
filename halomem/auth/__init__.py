"""Identity custody: principals, their tokens, and the one place that decides what a caller may do.

``tokens`` (format, hashing; standard library only), ``store`` (principals in the database),
``rights`` (``Caller`` and ``authorize``: every transport asks it, none decides on its own).
"""
from .rights import ADMIN, READ, SCOPES, WRITE, Caller, authorize

__all__ = ["ADMIN", "READ", "SCOPES", "WRITE", "Caller", "authorize"]
