"""Audit heads kept outside the database, so truncating or rewriting the chain is noticed.

The hash chain proves no row was changed *relative to its neighbours*; whoever can write the
table can still delete the newest rows, or rewrite the whole chain with fresh hashes. So the head
(newest seq and hash) is also appended, with O_APPEND, to ``audit-heads.log`` in the halomem home,
outside PostgreSQL: by every kernel when it closes (each CLI command), every minute by
`halomem serve`, and by `audit verify`. Verify then checks every recorded head is still in the
chain with the same hash.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

HEADS_FILE = "audit-heads.log"


@dataclass(frozen=True)
class Head:
    seq: int
    hash: str

    def __str__(self) -> str:
        return f"{self.seq}:{self.hash}"


def parse_head(text: str) -> Head:
    """``SEQ:HASH`` as printed by `audit verify`; ValueError when malformed."""
    seq, _, digest = text.strip().partition(":")
    if not seq.isdigit() or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"expected SEQ:HASH (a number, ':', 64 hex digits), got {text[:80]!r}")
    return Head(int(seq), digest)


def record(home: Path, head: Head | None) -> None:
    """Append ``head`` unless it is the last one recorded (one line per change, never rewritten)."""
    if head is None or not home.is_dir():  # a throwaway kernel (bench, conformance) has no home
        return
    path = home / HEADS_FILE
    recorded = read(home)
    if recorded and recorded[-1] == head:
        return
    line = f"{head} {datetime.now(timezone.utc).isoformat(timespec='seconds')}\n".encode("ascii")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read(home: Path) -> list[Head]:
    try:
        lines = (home / HEADS_FILE).read_text(encoding="ascii").splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return []
    heads = []
    for line in lines:
        try:
            heads.append(parse_head(line.split()[0]))
        except (ValueError, IndexError):
            continue
    return heads
