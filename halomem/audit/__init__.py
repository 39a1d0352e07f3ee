"""Append-only, hash-chained audit log."""
from .log import STORE_NS, AuditRow, Trace, VerifyResult, acting_as, append, current_trace, tail, tracing, verify

__all__ = ["STORE_NS", "AuditRow", "Trace", "VerifyResult", "acting_as", "append", "current_trace", "tail", "tracing", "verify"]
