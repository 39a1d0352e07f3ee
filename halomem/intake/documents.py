"""`halomem ingest PATH...` for documents: each file one memory (a long one in parts), keyed by its path
under its root, re-run safely.

- Keys and sources: a file's key is ``ROOT/relative/path`` (its source too, so a document's parts
  are one source, in order); a document longer than a memory is split into parts along its
  paragraphs, keyed ``ROOT/path#2``, ``#3``... Provenance names the path, root, title (or first
  line), modification time, the file's SHA-256, its format and the part.
- Re-running: a file whose SHA-256 matches its live memory's is not even parsed (``unchanged``);
  a changed one is re-read and its memories superseded (history kept), parts it no longer has are
  retired; with ``prune`` the memories of files gone from a walked root are retired (validity
  closed: gone from present searches, kept in history and as-of).
- A file that cannot be read (binary, unknown type, undecodable, an encrypted PDF, empty) is
  skipped with its reason, and its memory, if it had one, is left as it was; ``strict`` refuses
  the whole run instead, before anything is written.
- Writes go through the one bulk write path (write.bulk: consolidation included) in batches of
  files, each one transaction with its audit row (and each retirement with its own); a run that
  wrote nothing leaves one row saying so. A batch that lost a race for a key to another run of the
  same folder is read again and retried, so one run wins per file and nothing is written twice.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Protocol, Sequence

import sqlalchemy as sa

from ..errors import ConflictError, IngestError
from ..limits import MAX_CONTENT_CHARS, MAX_SOURCE_CHARS
from ..types import Namespace
from ..write.bulk import Outcome, ParsedRow
from .document import Document
from .files import Root, SourceFile
from .formats import Skip, read



class Store(Protocol):
    """What intake needs of the kernel (halomem.kernel.Kernel has it): the write path's phases,
    retirement and the audit trail, and the engine to read what is live."""

    engine: sa.Engine

    def write_rows(self, ns: Namespace, rows: list, *, label: str, request_id: str | None = None,
                   dry_run: bool = False) -> Any: ...
    def prepare_rows(self, ns: Namespace, rows: list, *, dry_run: bool = False) -> Any: ...
    def commit_rows(self, prepared: Any, *, label: str, request_id: str, run: Any = None) -> Any: ...
    def start_run(self, ns: Namespace) -> Any: ...
    def retire(self, ns: Namespace, ids: Sequence[str], *, reason: str, request_id: str | None = None) -> list[str]: ...
    def audit_event(self, ns: Namespace, action: str, record: dict[str, Any], request_id: str) -> None: ...

FILES_PER_BATCH = 256  # files one write transaction takes (their parts together): the embedder batches
# texts of like length together, so batches much smaller than this embed measurably slower
RETRIES = 3  # a batch that lost a key to a racing run is read again this many times
SHOWN_SKIPS = 20


@dataclass
class DocumentsReport:
    """What an ingest of documents did, file by file (results.DocumentsJSON is its JSON)."""

    namespace: str
    request_id: str
    dry_run: bool = False
    written: list[dict[str, Any]] = field(default_factory=list)  # {path, id, status: created|superseded, ...}
    unchanged: list[dict[str, Any]] = field(default_factory=list)  # {path, id}
    retired: list[dict[str, Any]] = field(default_factory=list)  # {path, id, reason}
    skipped: list[dict[str, Any]] = field(default_factory=list)  # {path, reason}

    @property
    def superseded(self) -> list[dict[str, Any]]:
        return [w for w in self.written if w["status"] == "superseded"]

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "request_id": self.request_id, "dry_run": self.dry_run,
                "written": self.written, "unchanged": self.unchanged,
                "superseded": [{"path": w["path"], "old": w.get("supersedes"), "new": w["id"]} for w in self.superseded],
                "retired": self.retired, "skipped": self.skipped,
                "counts": {"written": len(self.written), "unchanged": len(self.unchanged),
                           "superseded": len(self.superseded), "retired": len(self.retired),
                           "skipped": len(self.skipped)}}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _limited(key: str) -> str:
    """A key or source within the bound: a very long path keeps its start and a digest of the whole."""
    if len(key) <= MAX_SOURCE_CHARS:
        return key
    return key[:MAX_SOURCE_CHARS - 18] + "~" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:17]


def parts(document: Document, limit: int = MAX_CONTENT_CHARS) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    """The document's text in parts of at most ``limit`` characters, cut between paragraphs (a
    paragraph longer than a part is cut inside it), each with its blocks (for its passages); a
    document that fits is one part, its text."""
    text = document.text
    if len(text) <= limit:
        return [(text, tuple(document.blocks()))]
    out: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    chunk: list[str] = []
    blocks: list[tuple[str, str]] = []
    size = 0
    for context, paragraph in document.blocks():
        for piece in [paragraph[i:i + limit // 2] for i in range(0, len(paragraph), limit // 2)] or [""]:
            lead = f"{context}\n\n" if context and not chunk else ""
            if chunk and size + 2 + len(piece) > limit:
                out.append(("\n\n".join(chunk), tuple(blocks)))
                chunk, blocks, size = [], [], 0
                lead = f"{context}\n\n" if context else ""
            chunk.append(lead + piece)
            blocks.append((context, piece))
            size += len(lead) + len(piece) + 2
    if chunk:
        out.append(("\n\n".join(chunk), tuple(blocks)))
    return out


def _first_line(document: Document) -> str | None:
    text = document.text.strip()
    return text.splitlines()[0][:200] if text else None


def rows_of(file: SourceFile, document: Document, sha: str) -> list[ParsedRow]:
    """The memories one document becomes (module doc: keys, source, provenance)."""
    pieces = parts(document)
    modified = (datetime.fromtimestamp(file.modified, timezone.utc).isoformat(timespec="seconds")
                if file.modified is not None else None)
    source = _limited(file.key)
    rows = []
    for n, (text, blocks) in enumerate(pieces, 1):
        provenance = {"path": file.path, "root": file.root, "title": document.title or _first_line(document),
                      "modified": modified, "sha256": sha, "format": document.format}
        if len(pieces) > 1:
            provenance.update(part=n, parts=len(pieces))
        key = source if n == 1 else _limited(f"{file.key}#{n}")
        rows.append(ParsedRow(n, text, source, provenance, key, blocks))
    return rows


@dataclass(frozen=True)
class Live:
    """A live document memory of the namespace."""

    key: str
    id: str
    source: str
    sha256: str | None


def live_documents(kernel: Store, ns: Namespace, roots: Sequence[str]) -> dict[str, list[Live]]:
    """file key (its source) -> its live memories, for the documents ingested under ``roots``."""
    from ..db.schema import memories

    if not roots:
        return {}
    with kernel.engine.connect() as conn:
        rows = conn.execute(sa.select(memories.c.key, memories.c.id, memories.c.source,
                                      memories.c.provenance["sha256"].astext)
                            .where(memories.c.namespace == ns.path, memories.c.key.is_not(None),
                                   memories.c.provenance["root"].astext.in_(sorted(set(roots))),
                                   memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None)))
        out: dict[str, list[Live]] = {}
        for key, memory_id, source, sha in rows:
            out.setdefault(source or key, []).append(Live(key, memory_id, source or key, sha))
    return out


def ingest_documents(kernel: Store, ns: Namespace, roots: Sequence[Root], files: Sequence[SourceFile], *,
                     fmt: str | None = None, prune: bool = False, strict: bool = False, dry_run: bool = False,
                     request_id: str, on_total: Callable[[int], None] | None = None,
                     progress: Callable[[int], None] | None = None) -> DocumentsReport:
    """Ingest ``files`` (module doc); ``progress`` is told of each file done."""
    report = DocumentsReport(ns.path, request_id, dry_run)
    live = live_documents(kernel, ns, [r.name for r in roots])
    if on_total:
        on_total(len(files))
    todo: list[tuple[SourceFile, list[ParsedRow]]] = []
    stale: list[tuple[str, str, str]] = []  # (path, id, reason) to retire
    for file in files:
        source = _limited(file.key)
        if file.data is None:
            report.skipped.append({"path": file.key, "reason": file.error or "unreadable"})
            _advance(progress)
            continue
        sha = digest(file.data)
        had = live.get(source, [])
        if had and all(m.sha256 == sha for m in had):
            report.unchanged.extend({"path": m.key, "id": m.id} for m in sorted(had, key=lambda m: m.key))
            _advance(progress)
            continue
        document = read(file.data, file.path, fmt)
        if isinstance(document, Skip) or document.empty:
            reason = document.reason if isinstance(document, Skip) else "no text in it (empty)"
            report.skipped.append({"path": file.key, "reason": reason})
            _advance(progress)
            continue
        rows = rows_of(file, document, sha)
        keys = {r.key for r in rows}
        stale += [(m.key, m.id, "the document no longer has this part") for m in had if m.key not in keys]
        todo.append((file, rows))
    if strict and report.skipped:
        listed = "; ".join(f"{s['path']}: {s['reason']}" for s in report.skipped[:SHOWN_SKIPS])
        more = f" (+{len(report.skipped) - SHOWN_SKIPS} more)" if len(report.skipped) > SHOWN_SKIPS else ""
        raise IngestError(f"{len(report.skipped)} file(s) cannot be read: {listed}{more}; nothing was ingested"
                          " (--strict)")
    if prune:
        present = {_limited(f.key) for f in files}
        walked = {r.name for r in roots if r.whole}
        stale += [(m.key, m.id, "its file is gone from the ingested folder")
                  for source, memories in live.items() if source not in present
                  for m in memories if source.split("/", 1)[0] in walked]
    batches = [todo[start:start + FILES_PER_BATCH] for start in range(0, len(todo), FILES_PER_BATCH)]
    for batch, outcomes in _write_batches(kernel, ns, batches, request_id, dry_run):
        for row, outcome in zip([row for _, rows in batch for row in rows], outcomes):
            entry = {"path": row.key, "id": outcome.id}
            if outcome.status in ("created", "superseded"):
                report.written.append({**entry, "status": outcome.status,
                                       **({"supersedes": outcome.old} if outcome.old else {}),
                                       "similar": [s.to_dict() for s in outcome.similar]})
            else:
                report.unchanged.append({**entry, "status": outcome.status,
                                         "similar": [s.to_dict() for s in outcome.similar]})
        for _ in batch:
            _advance(progress)
    if stale:
        by_reason: dict[str, list[tuple[str, str]]] = {}
        for path, memory_id, reason in stale:
            by_reason.setdefault(reason, []).append((path, memory_id))
        for reason, gone in by_reason.items():
            closed = set(m for _, m in gone) if dry_run else set(
                kernel.retire(ns, [m for _, m in gone], reason=reason, request_id=request_id))
            report.retired.extend({"path": path, "id": m, "reason": reason} for path, m in gone if m in closed)
    if not todo and not report.retired and not dry_run:  # nothing was written: the run's own audit row
        kernel.audit_event(ns, "ingest", {"outcome": "ok", "files": len(files), "written": 0,
                                          "unchanged": len(report.unchanged), "skipped": len(report.skipped),
                                          "file": "documents"}, request_id)
    return report


def _write_batches(kernel: Store, ns: Namespace, batches: list[list[tuple[SourceFile, list[ParsedRow]]]],
                   request_id: str, dry_run: bool) -> Iterator[tuple[list, list[Outcome]]]:
    """Each batch's outcomes, in order. A batch's transaction runs in a thread of its own while the
    next batch is read and embedded (the database's work and the embedder's overlap); a batch whose
    transaction lost a key to a racing run, or whose embedder a reembed swapped, is written again."""
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    from ..embed.registry import EmbedderChanged
    from ..write.bulk import Applied

    def rows(batch: list[tuple[SourceFile, list[ParsedRow]]]) -> list[ParsedRow]:
        return [row for _, file_rows in batch for row in file_rows]

    def finish(batch: list, future: Any) -> tuple[list, list[Outcome]]:
        try:
            return batch, future.result().outcomes
        except (ConflictError, EmbedderChanged):
            return batch, _write_batch(kernel, ns, rows(batch), request_id, dry_run)

    run = kernel.start_run(ns)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="documents-commit") as pool:
        pending = None
        for batch in batches:
            prepared = kernel.prepare_rows(ns, rows(batch), dry_run=dry_run)
            if pending is not None:
                yield finish(*pending)
                pending = None
            if isinstance(prepared, Applied):  # a dry run: decided, nothing to commit
                yield batch, prepared.outcomes
                continue
            pending = (batch, pool.submit(contextvars.copy_context().run, kernel.commit_rows, prepared,
                                          label="documents", request_id=request_id, run=run))
        if pending is not None:
            yield finish(*pending)


def _write_batch(kernel: Store, ns: Namespace, rows: list[ParsedRow], request_id: str,
                 dry_run: bool) -> list[Outcome]:
    for attempt in range(RETRIES + 1):
        try:
            return kernel.write_rows(ns, rows, label="documents", request_id=request_id, dry_run=dry_run).outcomes
        except ConflictError:
            if attempt == RETRIES:
                raise
    return []


def _advance(progress: Callable[[int], None] | None) -> None:
    if progress:
        progress(1)
