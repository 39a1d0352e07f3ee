"""Reading a JSONL or CSV file of records (content, source, provenance, key) into rows for the bulk
write path (write.bulk): every line validated before anything is written.

Nothing of a file is applied unless every line is good (or ``skip_bad`` was asked for), and the
whole file commits in one transaction with its audit row (write.bulk): a crash mid-ingest leaves
either the whole file or none of it, and only a committed ingest is ever reported as written.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterator

from ..errors import HalomemError, IngestError
from ..limits import MAX_KEY_CHARS
from .bulk import ParsedRow
from .validate import check_content, check_provenance, check_source

MAX_FILE_BYTES = 2 * 1024**3
FIELDS = {"content", "source", "provenance", "key"}
SHOWN_BAD_LINES = 20


def _detect_format(path: Path, fmt: str | None) -> str:
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if fmt in ("jsonl", "ndjson", "json"):
        return "jsonl"
    if fmt == "csv":
        return "csv"
    raise IngestError(f"{path}: unknown format {fmt!r}: use .jsonl or .csv (or --format)")


def jsonl_records(text: str) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(line number, the JSON object on it, or why it is bad) for each non-blank line."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, f"not valid JSON ({exc.msg})"
            continue
        yield number, record if isinstance(record, dict) else "a line must be a JSON object"


def _records(path: Path, fmt: str, text: str) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(line number, record or a reason it is bad)."""
    yield from jsonl_records(text) if fmt == "jsonl" else _csv_records(path, text)


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
