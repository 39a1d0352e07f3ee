"""Append-only, hash-chained audit log."""
from .log import AuditRow, VerifyResult, append, tail, verify

__all__ = ["AuditRow", "VerifyResult", "append", "tail", "verify"]
