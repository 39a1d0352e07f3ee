"""Audit heads kept outside the database, so truncating or rewriting the chain is noticed.

The hash chain proves no row was changed *relative to its neighbours*; whoever can write the
table can still delete the newest rows, or rewrite the whole chain with fresh hashes. So the head
(newest seq and hash) is also kept in the halomem home, outside PostgreSQL, by every kernel when it
closes (each CLI command), every minute by `halomem serve`, and by `audit verify`:

- ``audit-head.latest``: the newest head recorded, replaced atomically each time (one line);
- ``audit-heads.log``: a history, appended with O_APPEND when the chain has grown by
  ``HISTORY_EVERY_ROWS`` since its last line, so the file grows with the trail, never with reads;
- ``audit-verified``: the position the last verification proved, where the next one may start
  (incremental verification: only the rows after it are recomputed).

Verify then checks every recorded head is still in the chain with the same hash (one query).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

HEADS_FILE = "audit-heads.log"
LATEST_FILE = "audit-head.latest"
VERIFIED_FILE = "audit-verified"
FILES = (HEADS_FILE, LATEST_FILE, VERIFIED_FILE)
HISTORY_EVERY_ROWS = 1000


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


def _line(head: Head) -> bytes:
    return f"{head} {datetime.now(timezone.utc).isoformat(timespec='seconds')}\n".encode("ascii")


def _replace(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (a reader never sees half a line)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def record(home: Path, head: Head | None) -> None:
    """Keep ``head`` as the latest, and in the history when the chain grew enough since its last line."""
    if head is None or not home.is_dir():  # a throwaway kernel (bench, conformance) has no home
        return
    latest = _read_one(home / LATEST_FILE)
    if latest != head:
        _replace(home / LATEST_FILE, _line(head))
    history = read_history(home)
    if history and (history[-1] == head or head.seq - history[-1].seq < HISTORY_EVERY_ROWS):
        return
    fd = os.open(home / HEADS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, _line(head))
    finally:
        os.close(fd)


def record_verified(home: Path, head: Head | None) -> None:
    """The position a verification just proved (the next one may start there)."""
    if head is not None and home.is_dir():
        _replace(home / VERIFIED_FILE, _line(head))


def verified(home: Path) -> Head | None:
    return _read_one(home / VERIFIED_FILE)


def read(home: Path) -> list[Head]:
    """Every head recorded outside the database: the history and the latest."""
    heads = read_history(home)
    latest = _read_one(home / LATEST_FILE)
    return heads + ([latest] if latest is not None and latest not in heads else [])


def read_history(home: Path) -> list[Head]:
    return _parse_lines(home / HEADS_FILE)


def _read_one(path: Path) -> Head | None:
    found = _parse_lines(path)
    return found[-1] if found else None


def _parse_lines(path: Path) -> list[Head]:
    try:
        lines = path.read_text(encoding="ascii").splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return []
    heads = []
    for line in lines:
        try:
            heads.append(parse_head(line.split()[0]))
        except (ValueError, IndexError):
            continue
    return heads
