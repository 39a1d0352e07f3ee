"""Bulk ingest of a JSONL or CSV file: validate everything, embed, then one COPY transaction.

Nothing of a file is applied unless every line is good (or ``skip_bad`` was asked for), and the
whole file commits in one transaction with its audit row: a crash mid-ingest leaves either the
whole file or none of it, and only a committed ingest is ever reported as written.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator

import sqlalchemy as sa

from .. import audit
from ..db.schema import memories
from ..embed import Embedder
from ..embed.passages import Embedded, embed_memories
from ..errors import ConflictError, HalomemError, IngestError
from ..index import IndexReader, Scope
from ..results import IngestReport  # noqa: F401 - re-exported
from ..types import Namespace
from .mentions import mentioned_entities
from . import chains, lexicon, places
from .validate import check_content, check_provenance, check_source
from .vector_swap import hold_store_embedder
from .writer import new_memory_id, new_request_id

MAX_FILE_BYTES = 2 * 1024**3
FIELDS = {"content", "source", "provenance", "key"}
EMBED_BATCH = 512
SHOWN_BAD_LINES = 20
MAX_KEY_CHARS = 200


@dataclass
class ParsedRow:
    line: int
    content: str
    source: str | None
    provenance: dict[str, Any]
    key: str | None = None  # the caller's stable id for this memory (a doc section, a ticket)


@dataclass
class Applied:
    """What a keyed ingest did: new rows, rows left as they were, and (old, new) supersessions."""
    written: list[str]
    unchanged: list[str]
    superseded: list[tuple[str, str]]


def _detect_format(path: Path, fmt: str | None) -> str:
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if fmt in ("jsonl", "ndjson", "json"):
        return "jsonl"
    if fmt == "csv":
        return "csv"
    raise IngestError(f"{path}: unknown format {fmt!r}: use .jsonl or .csv (or --format)")


def _records(path: Path, fmt: str, text: str) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(line number, record or a reason it is bad)."""
    if fmt == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, f"not valid JSON ({exc.msg})"
                continue
            yield number, record if isinstance(record, dict) else "a line must be a JSON object"
        return
    yield from _csv_records(path, text)


class _Lines:
    """Physical lines with a cursor, so the CSV reader can restart after a malformed record."""

    def __init__(self, lines: list[str], pos: int) -> None:
        self.lines, self.pos = lines, pos

    def __iter__(self) -> "_Lines":
        return self

    def __next__(self) -> str:
        if self.pos >= len(self.lines):
            raise StopIteration
        self.pos += 1
        return self.lines[self.pos - 1]


def _csv_records(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """Strict CSV: an unterminated quote, a stray quote, a NUL or a wrong number of values makes that
    record bad (with its first line's number) instead of swallowing the lines after it."""
    lines = text.splitlines(keepends=True)
    try:
        header = next(csv.reader(lines[:1], strict=True), [])
    except csv.Error as exc:
        raise IngestError(f"{path}:1: malformed CSV header ({exc})") from None
    if "content" not in header:
        raise IngestError(f"{path}: CSV header must name a 'content' column")
    src = _Lines(lines, 1)
    reader = csv.reader(src, strict=True)
    while src.pos < len(lines):
        start = src.pos
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield start + 1, f"malformed CSV ({exc})"
            src.pos = start + 1  # resynchronise on the next physical line
            reader = csv.reader(src, strict=True)
            continue
        if not row or row == [""]:
            continue
        if len(row) != len(header):
            yield start + 1, f"{len(row)} values for {len(header)} header columns"
            continue
        record: dict[str, Any] = dict(zip(header, row))
        if record.get("provenance"):
            try:
                record["provenance"] = json.loads(record["provenance"])
            except json.JSONDecodeError:
                yield start + 1, "provenance is not valid JSON"
                continue
        yield start + 1, record


def _row(number: int, record: dict[str, Any]) -> ParsedRow:
    unknown = sorted(set(record) - FIELDS)
    if unknown:
        raise IngestError(f"unknown field(s) {', '.join(unknown)} (allowed: content, source, provenance, key)")
    return ParsedRow(number, check_content(record.get("content")), check_source(record.get("source")),
                     check_provenance(record.get("provenance") or None), check_key(record.get("key")))


def parse_ingest_file(path: Path, fmt: str | None = None, skip_bad: bool = False
                      ) -> tuple[list[ParsedRow], list[tuple[int, str]]]:
    fmt = _detect_format(path, fmt)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise IngestError(f"{path}: larger than {MAX_FILE_BYTES // 1024**3} GiB")
        raw = path.read_bytes()
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_ingest_bytes(raw, fmt, skip_bad, label=str(path))


def parse_ingest_bytes(raw: bytes, fmt: str, skip_bad: bool = False, *, label: str = "body"
                       ) -> tuple[list[ParsedRow], list[tuple[int, str]]]:
    """Validate every line of a JSONL or CSV document; ``label`` names it in errors."""
    fmt = _detect_format(Path(label), fmt)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise IngestError(f"{label}:{line}: not UTF-8 text") from None
    rows: list[ParsedRow] = []
    bad: list[tuple[int, str]] = []
    for number, record in _records(Path(label), fmt, text):
        try:
            if isinstance(record, str):
                raise IngestError(record)
            rows.append(_row(number, record))
        except HalomemError as exc:
            bad.append((number, str(exc)))
    bad += _repeated_keys(rows)
    bad_lines = {n for n, _ in bad}
    rows = [r for r in rows if r.line not in bad_lines]
    bad.sort()
    if bad and not skip_bad:
        listed = "; ".join(f"{label}:{n}: {why}" for n, why in bad[:SHOWN_BAD_LINES])
        more = f" (+{len(bad) - SHOWN_BAD_LINES} more)" if len(bad) > SHOWN_BAD_LINES else ""
        raise IngestError(f"{len(bad)} bad line(s): {listed}{more}; nothing was ingested"
                          " (fix them, or skip bad lines: --skip-bad on the CLI, skip_bad=true over HTTP)")
    if bad and not rows:
        raise IngestError(f"{label}: every line is bad ({len(bad)}), nothing to ingest: {label}:{bad[0][0]}: {bad[0][1]}")
    return rows, bad


def _vector_text(vec: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vec) + "]"


def check_key(key: object) -> str | None:
    if key is None or key == "":
        return None
    if not isinstance(key, str) or len(key) > MAX_KEY_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise IngestError(f"key must be text of at most {MAX_KEY_CHARS} printable characters")
    return key


def _repeated_keys(rows: list[ParsedRow]) -> list[tuple[int, str]]:
    first: dict[str, int] = {}
    bad = []
    for r in rows:
        if r.key is not None:
            if r.key in first:
                bad.append((r.line, f"key {r.key[:60]!r} repeats line {first[r.key]}"))
            else:
                first[r.key] = r.line
    return bad


def bulk_insert(engine: Any, embedder: Embedder, ns: Namespace, rows: list[ParsedRow], *,
                label: str, progress: Callable[[int], None] | None = None,
                request_id: str | None = None) -> list[str]:
    """Embed in batches, then COPY every row and its mentions in one transaction; the new ids."""
    return bulk_apply(engine, embedder, ns, rows, label=label, progress=progress, request_id=request_id).written


def bulk_apply(engine: Any, embedder: Embedder, ns: Namespace, rows: list[ParsedRow], *,
               label: str, progress: Callable[[int], None] | None = None,
               request_id: str | None = None, on_write: Callable[[], None] | None = None) -> Applied:
    """``bulk_insert`` with keys: a key already live in ``ns`` with the same content is left as it is
    (and not embedded again: a nightly re-sync of unchanged documents costs no embedding); with new
    content its row is superseded (the chain kept), all in the one transaction."""
    same = _live_contents(engine, ns, rows)
    embedded: list[Embedded | None] = [None] * len(rows)
    todo = [i for i, r in enumerate(rows) if r.key is None or same.get(r.key) != r.content]
    if progress and len(todo) < len(rows):
        progress(len(rows) - len(todo))
    for start in range(0, len(todo), EMBED_BATCH):
        batch = todo[start:start + EMBED_BATCH]
        for i, vectors in zip(batch, embed_memories(embedder, [rows[i].content for i in batch])):
            embedded[i] = vectors
        if progress:
            progress(len(batch))
    if on_write:
        on_write()  # embedding done; the database phase begins
    try:
        with engine.begin() as conn:
            return _apply(conn, embedder, ns, rows, embedded, label, request_id or new_request_id())
    except sa.exc.IntegrityError as exc:
        if "memories_live_key_idx" in str(exc.orig):
            raise ConflictError("another write used the same key at the same time; nothing was ingested,"
                                " retry") from None
        raise


def _live_contents(engine: Any, ns: Namespace, rows: list[ParsedRow]) -> dict[str, str]:
    """The content of the live row each key names now (read before embedding; _apply re-reads under lock)."""
    keys = [r.key for r in rows if r.key is not None]
    if not keys:
        return {}
    with engine.connect() as conn:
        found = conn.execute(sa.select(memories.c.key, memories.c.content).where(
            memories.c.namespace == ns.path, memories.c.key.in_(keys),
            memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None)))
        return {r.key: r.content for r in found}


def _apply(conn: Any, embedder: Embedder, ns: Namespace, rows: list[ParsedRow], embedded: list[Embedded | None],
           label: str, request_id: str) -> Applied:
    hold_store_embedder(conn, embedder.name)
    keys = [r.key for r in rows if r.key is not None]
    live: dict[str, Any] = {}
    if keys:  # lock the live rows these keys name: a concurrent ingest of the same keys waits
        found = conn.execute(sa.select(memories.c.key, memories.c.id, memories.c.content, memories.c.source,
                                       memories.c.position)
                             .where(memories.c.namespace == ns.path, memories.c.key.in_(keys),
                                    memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None))
                             .with_for_update())
        live = {r.key: r for r in found}
    applied = Applied([], [], [])
    new: list[tuple[str, ParsedRow, Embedded | None, str | None]] = []
    kept: list[int | None] = []  # the places successors keep (chains.successor_place)
    for row, vec in zip(rows, embedded):
        old = live.get(row.key) if row.key is not None else None
        if old is not None and old.content == row.content:
            applied.unchanged.append(old.id)
            continue
        memory_id = new_memory_id()
        place = None
        if old is not None:  # close the old head first (one live row per key), by the one chain rule
            closed = chains.close_head(conn, ns, old.id, memory_id)
            row = replace(row, source=chains.successor_source(row.source, closed))
            place = chains.successor_place(row.source, closed)
            applied.superseded.append((old.id, memory_id))
        new.append((memory_id, row, vec, old.id if old else None))
        kept.append(place)
        applied.written.append(memory_id)
    late = [i for i, (_, _, vec, _) in enumerate(new) if vec is None]  # changed since _live_contents read it
    for i, vectors in zip(late, embed_memories(embedder, [new[i][1].content for i in late])):
        new[i] = (new[i][0], new[i][1], vectors, new[i][3])
    positions = places.assign(conn, ns.path, [row.source for _, row, _, _ in new], kept)
    known = IndexReader(conn).visible_entities(Scope(ns))
    cursor = conn.connection.driver_connection.cursor()
    with cursor.copy("COPY memories (id, namespace, content, embedding, source, position, provenance, key,"
                     " supersedes) FROM STDIN") as cp:
        for (memory_id, row, vec, supersedes), position in zip(new, positions):
            cp.write_row((memory_id, ns.path, row.content, _vector_text(vec.vector), row.source, position,
                          json.dumps(row.provenance, ensure_ascii=False), row.key, supersedes))
    if any(vec.passages for _, _, vec, _ in new):
        with cursor.copy("COPY passages (memory_id, ordinal, embedding) FROM STDIN") as cp:
            for memory_id, _, vec, _ in new:
                for ordinal, passage in enumerate(vec.passages):
                    cp.write_row((memory_id, ordinal, _vector_text(passage)))
    if known:
        with cursor.copy("COPY mentions (memory_id, entity_id) FROM STDIN") as cp:
            for memory_id, row, _, _ in new:
                for entity_id in mentioned_entities(row.content, known):
                    cp.write_row((memory_id, entity_id))
    lexicon.count(conn, added=applied.written, retired=[old for old, _ in applied.superseded])
    audit.append(conn, ns.path, "ingest", f"ingest ok rows={len(rows)} written={len(applied.written)}"
                 f" unchanged={len(applied.unchanged)} superseded={len(applied.superseded)} file={label}", request_id)
    return applied
