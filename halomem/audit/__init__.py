"""Append-only, hash-chained audit log."""
from .log import AuditRow, Trace, VerifyResult, acting_as, append, tail, tracing, verify

__all__ = ["AuditRow", "Trace", "VerifyResult", "acting_as", "append", "tail", "tracing", "verify"]
