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

from ..types import Candidate, EntityFact, ScoredRef, VectorHit

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


# --- the contract's types as data (kernel -> worker: trusted; worker -> kernel: validated) -------
def candidate_out(c: Candidate) -> dict:
    return {"ref": c.ref, "content": c.content, "source": c.source}


def vector_hit_out(h: VectorHit) -> dict:
    return {"ref": h.ref, "content": h.content, "score": h.score, "source": h.source}


def entity_fact_out(f: EntityFact) -> dict:
    return {"ref": f.ref, "content": f.content, "entity": f.entity, "hop": f.hop}


def scored_ref_out(r: ScoredRef) -> dict:
    return {"id": r.id, "tier": r.tier, "ref": r.ref, "score": r.score, "content": r.content,
            "token_estimate": r.token_estimate}


def scored_ref_in(data: Any) -> ScoredRef:
    """A ScoredRef from a worker, checked field by field (anything else is a protocol violation)."""
    if not isinstance(data, dict) or set(data) != {"id", "tier", "ref", "score", "content", "token_estimate"}:
        raise WireError("a result is not a ScoredRef")
    ok = (isinstance(data["ref"], str) and len(data["ref"]) <= 1024 and data["tier"] in ("L2", "L3")
          and (data["id"] is None or isinstance(data["id"], str) and len(data["id"]) <= 1024)
          and isinstance(data["score"], (int, float)) and not isinstance(data["score"], bool)
          and math.isfinite(data["score"]) and isinstance(data["content"], str)
          and isinstance(data["token_estimate"], int) and not isinstance(data["token_estimate"], bool)
          and data["token_estimate"] >= 0)
    if not ok:
        raise WireError("a result has a field of the wrong type")
    return ScoredRef(data["id"], data["tier"], data["ref"], float(data["score"]), data["content"],
                     data["token_estimate"])
