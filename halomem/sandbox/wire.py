"""Length-prefixed JSON frames over pipes, and the driver contract's types as plain data.

JSON, never pickle: the kernel must not deserialize objects chosen by untrusted code. Every frame
from a worker is validated on the kernel side; a malformed one ends that worker.
"""
from __future__ import annotations

import json
import math
import os
import select
import struct
import time
from typing import Any

from ..types import Candidate, CorpusStats, Entity, EntityFact, ScoredRef, VectorHit

MAX_FRAME = 64 * 1024 * 1024
_HEADER = struct.Struct(">I")


class WireError(Exception):
    """A broken, oversized or late frame: the peer is dead or misbehaving."""


def send(fd: int, message: Any) -> None:
    data = json.dumps(message, separators=(",", ":"), allow_nan=False, ensure_ascii=False).encode("utf-8")
    if len(data) > MAX_FRAME:
        raise WireError(f"frame of {len(data)} bytes over the {MAX_FRAME} limit")
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        try:
            written = os.write(fd, view)
        except (BrokenPipeError, OSError) as exc:
            raise WireError(f"peer gone: {exc.strerror or exc}") from None
        view = view[written:]


def _read_exactly(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, remaining = [], n
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise WireError("deadline passed")
        try:
            chunk = os.read(fd, min(remaining, 1 << 20))
        except OSError as exc:
            raise WireError(f"peer gone: {exc.strerror or exc}") from None
        if not chunk:
            raise WireError("peer closed the pipe")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def recv(fd: int, deadline: float | None = None) -> Any:
    """One message; ``deadline`` (time.monotonic) bounds the whole frame."""
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size, deadline))
    if size > MAX_FRAME:
        raise WireError(f"frame of {size} bytes over the {MAX_FRAME} limit")
    try:
        return json.loads(_read_exactly(fd, size, deadline).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise WireError(f"not a JSON frame: {type(exc).__name__}") from None


# --- the contract's types as rows, in field order (kernel -> worker: trusted; worker -> kernel:
# validated). Rows rather than objects: a view call can carry thousands, and lists encode faster.
def candidates_out(items: list[Candidate]) -> list:
    return [(c.ref, c.content, c.source, c.score, c.position) for c in items]


def corpus_stats_out(stats: CorpusStats) -> list:
    return [stats.documents, stats.average_length, stats.document_frequency]


def vector_hits_out(items: list[VectorHit]) -> list:
    return [(h.ref, h.content, h.score, h.source, h.position) for h in items]


def entities_out(items: list[Entity]) -> list:
    return [(e.name, list(e.aliases)) for e in items]


def entity_facts_out(items: list[EntityFact]) -> list:
    return [(f.ref, f.content, f.entity, f.hop) for f in items]


def scored_refs_out(items: list[ScoredRef]) -> list:
    return [(r.id, r.tier, r.ref, r.score, r.content, r.token_estimate) for r in items]


def scored_ref_in(row: Any) -> ScoredRef:
    """A ScoredRef from a worker, checked field by field (anything else is a protocol violation)."""
    if not isinstance(row, list) or len(row) != 6:
        raise WireError("a result is not a ScoredRef")
    id_, tier, ref, score, content, tokens = row
    ok = (isinstance(ref, str) and len(ref) <= 1024 and tier in ("L2", "L3")
          and (id_ is None or isinstance(id_, str) and len(id_) <= 1024)
          and isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score)
          and isinstance(content, str) and isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0)
    if not ok:
        raise WireError("a result has a field of the wrong type")
    return ScoredRef(id_, tier, ref, float(score), content, tokens)


def widen_pipe(fd: int, size: int = 1 << 20) -> None:
    """A larger pipe buffer: a 500-candidate reply then crosses in one write, not 64 KiB turns."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (OSError, AttributeError):
        pass
