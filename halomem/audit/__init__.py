"""Append-only, hash-chained audit log."""
from .log import STORE_NS, AuditRow, Trace, VerifyResult, acting_as, append, tail, tracing, verify

__all__ = ["STORE_NS", "AuditRow", "Trace", "VerifyResult", "acting_as", "append", "tail", "tracing", "verify"]
