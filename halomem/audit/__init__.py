"""Append-only, hash-chained audit log."""
from .log import AuditRow, VerifyResult, acting_as, append, tail, verify

__all__ = ["AuditRow", "VerifyResult", "acting_as", "append", "tail", "verify"]
