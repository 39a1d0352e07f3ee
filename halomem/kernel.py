"""The Kernel: the composition root. It boots the parts (engine, schema, embedder, mounted drivers)
and puts them together: the write path (halomem.write), the search path (halomem.search), the
index readers (halomem.index) and the audit trail. Its methods are the library's API and act as
the operator of the namespace they name; input bounds live in halomem.limits.
"""
from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

import sqlalchemy as sa

from . import audit
from .audit.heads import Head
from .config import Settings, load_settings
from .db.engine import make_engine, make_reader_engine, make_replicas
from .db.replicas import ReadRouter, Replica
from .db import migrations
from .db.migrations import READER_ROLE, migrate, stored_embedder
from .drivers import DriverRegistry
from .embed import DEFAULT_SPEC, Embedder, EmbedderOptions, get_embedder
from .embed.registry import ActiveEmbedder

if TYPE_CHECKING:
    from .auth.rights import Caller
    from .write.reembed import Reembedded
from .errors import InvalidInputError, NotFoundError
from .index import MemoryIndex, Scope
from .limits import check_keys, check_page, check_query, check_sources, namespace
from .index import cursors
from .mounts import close_drivers, mount_drivers
from .results import IngestReport, MemoryRow, NewMemory, Page, SearchResult
from .search import Searcher
from .policy import Policy, effective_policy, list_policies, parse_policy
from .types import Namespace, ScoredRef
from .write import Writer, parse_ingest_bytes, parse_ingest_file
from .write.bulk import Applied, bulk_apply
from .write.writer import new_request_id

log = logging.getLogger("halomem")


class Kernel:
    def __init__(self, settings: Settings, engine: sa.Engine, embedder: Embedder,
                 reader_engine: sa.Engine | None = None, replicas: Sequence[Replica] = ()) -> None:
        self.settings = settings
        self.engine = engine
        self.reader_engine = reader_engine
        self.embedders = ActiveEmbedder(embedder, EmbedderOptions.from_settings(settings))
        self.index = MemoryIndex(reader_engine or engine)
        self.router = ReadRouter(engine, self.index, list(replicas))
        self.writer = Writer(engine, self.embedders)
        self.registry = DriverRegistry(warn=log.warning)
        self.searcher = Searcher(engine, self.router, self.registry, self.embedders)

    @classmethod
    def boot(cls, settings: Settings | None = None, *, mount_plugins: bool = True) -> "Kernel":
        """Connect (starting the embedded server if needed), migrate, mount drivers. ``with Kernel.boot() as k:``."""
        settings = settings or load_settings()
        engine = make_engine(settings)
        try:  # unset, the embedder is the store's own (a new store gets the default)
            embedder = get_embedder(settings.embedder or stored_embedder(engine) or DEFAULT_SPEC,
                                    EmbedderOptions.from_settings(settings))
            migrate(engine, embedder.name, embedder.dim)
        except BaseException:
            engine.dispose()
            raise
        kernel = cls(settings, engine, embedder, make_reader_engine(engine, READER_ROLE),
                     make_replicas(settings.read_database_url, MemoryIndex))
        mount_drivers(kernel.registry, settings, plugins=mount_plugins)
        return kernel

    @property
    def embedder(self) -> Embedder:
        """The embedder in use: the store's (it follows a reembed of a live store)."""
        return self.embedders.current

    def __enter__(self) -> "Kernel":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release database connections and driver workers (the embedded server stops when its last
        user exits)."""
        close_drivers(self.registry)
        if getattr(self, "_chat_model", None) is not None:
            self._chat_model.close()
        self.record_audit_head()
        if self.reader_engine is not None:
            self.reader_engine.dispose()
        for replica in self.router.replicas:
            replica.engine.dispose()
        self.engine.dispose()

    # --- writes ------------------------------------------------------------------------------
    def remember(self, ns: str | Namespace, content: str, *, source: str | None = None,
                 provenance: dict[str, Any] | None = None, request_id: str | None = None) -> NewMemory:
        """Write one L2 memory into ``ns`` (embedded, mentions linked, audited in one transaction)."""
        request_id = request_id or new_request_id()
        made = self.writer.remember(namespace(ns), content, source=source, provenance=provenance,
                                    request_id=request_id)
        return replace(made, request_id=request_id)

    def supersede(self, ns: str | Namespace, old_id: str, content: str, *, source: str | None = None,
                  provenance: dict[str, Any] | None = None, request_id: str | None = None) -> NewMemory:
        """Close ``old_id``'s validity and write its successor; exactly one of racing callers wins."""
        request_id = request_id or new_request_id()
        made = self.writer.supersede(namespace(ns), old_id, content, source=source, provenance=provenance,
                                     request_id=request_id)
        return replace(made, request_id=request_id)

    def erase(self, ns: str | Namespace, memory_id: str, *, reason: str = "", chain: bool = False,
              request_id: str | None = None) -> list[str]:
        """Remove a memory's content, vector, source (and its place in it), provenance and mentions; keep
        a tombstone (id, namespace, validity times) and an audit row with ids only; ``chain``: every
        version of its supersedence chain at once. ``purge`` then rewrites the files. Returns the ids
        erased."""
        return self.writer.erase(namespace(ns), memory_id, reason=reason, chain=chain, request_id=request_id)

    def purge(self, *, request_id: str | None = None) -> list[str]:
        """Leave no copy of erased content in live table, TOAST or index files (operator only);
        returns what the database role was not allowed to do (see Writer.purge)."""
        return self.writer.purge(request_id=request_id)

    def reembed(self, target: Embedder, *, batch: int = 256, request_id: str | None = None,
                **progress: Any) -> "Reembedded":
        """Remake every vector with ``target`` on the live store, then swap (write.reembed); this
        kernel uses ``target`` from then on (other kernels follow at their next read or write)."""
        from .write.reembed import reembed

        done = reembed(self.engine, target, batch=batch, request_id=request_id, **progress)
        self.embedders.current = target
        self.index.catalog.forget()
        return done

    def ingest(self, ns: str | Namespace, path: Path, *, fmt: str | None = None, skip_bad: bool = False,
               progress: Callable[[int], None] | None = None,
               on_parsed: Callable[[int], None] | None = None, request_id: str | None = None,
               on_write: Callable[[], None] | None = None) -> IngestReport:
        """Bulk-write a JSONL/CSV file in one transaction: all of it or none of it."""
        rows, bad = parse_ingest_file(path, fmt, skip_bad)
        return self._ingest_rows(namespace(ns), rows, bad, path.name, progress, on_parsed, request_id, on_write)

    def ingest_bytes(self, ns: str | Namespace, raw: bytes, *, fmt: str = "jsonl", skip_bad: bool = False,
                     label: str = "body", request_id: str | None = None, extract: bool = False,
                     **progress: Any) -> IngestReport:
        """``ingest`` for a file already in memory (an HTTP body, stdin): records (jsonl, csv) or the
        turns of conversations (chat: intake.chat); ``extract``: then the chat model's facts from each
        session with new turns (formation), the turns stored first whatever it does."""
        if extract and fmt != "chat":
            raise InvalidInputError("extract is for conversations (format chat)")
        model = self.chat_model() if extract else None  # refused before anything is written when unset
        if fmt == "chat":
            from .intake.chat import parse_chat

            rows, bad = parse_chat(raw, label, skip_bad)
        else:
            rows, bad = parse_ingest_bytes(raw, fmt, skip_bad, label=label)
        ns, request_id = namespace(ns), request_id or new_request_id()
        report = self._ingest_rows(ns, rows, bad, label, progress.get("progress"), progress.get("on_parsed"),
                                   request_id, progress.get("on_write"))
        if model is None:
            return report
        from .formation.run import sessions_to_extract

        return replace(report, extraction=self._form(ns, model, sessions_to_extract(self.engine, ns, rows, report.items),
                                                     request_id))

    def extract(self, ns: str | Namespace, *, retry: bool = False, sessions: Sequence[str] = (),
                request_id: str | None = None) -> Any:
        """Extract facts from stored sessions: those whose last extraction failed (``retry``) and
        those named; returns a results.Extraction."""
        from .formation.run import failed_sessions, stored_sessions

        ns = namespace(ns)
        model = self.chat_model()
        failed = failed_sessions(self.engine, ns) if retry else []
        again = {s.name for s in failed}  # a failed session also named is extracted once
        chosen = failed + stored_sessions(self.engine, ns, [name for name in dict.fromkeys(sessions) if name not in again])
        return self._form(ns, model, chosen, request_id or new_request_id())

    def model_usage(self, ns: str | Namespace, days: float = 7.0) -> list[dict[str, Any]]:
        """Model calls and tokens per namespace (``ns`` and below) and UTC day, over the last ``days``."""
        from datetime import timedelta

        from .audit.usage import usage

        since = datetime.now(timezone.utc) - timedelta(days=days)
        with self.engine.connect() as conn:
            return usage(conn, namespace(ns).path, since)

    def _form(self, ns: Namespace, model: Any, sessions: Sequence[Any], request_id: str) -> Any:
        from .formation.extract import Formation

        return Formation(self, model, ns, request_id).run(sessions)

    def chat_model(self) -> Any:
        """Formation's chat model (formation.chat_model), made once; InvalidInputError when none is set."""
        if getattr(self, "_chat_model", None) is None:
            from .formation.chat_model import chat_model

            self._chat_model = chat_model(self.settings)
        return self._chat_model

    def _ingest_rows(self, ns: Namespace, rows: list, bad: list[tuple[int, str]], label: str,
                     progress: Callable[[int], None] | None, on_parsed: Callable[[int], None] | None,
                     request_id: str | None, on_write: Callable[[], None] | None = None) -> IngestReport:
        request_id = request_id or new_request_id()
        if on_parsed:
            on_parsed(len(rows))
        applied = self.write_rows(ns, rows, label=label, progress=progress, request_id=request_id,
                                  on_write=on_write) if rows else Applied()
        return IngestReport(written=len(applied.written), skipped=bad, ids=applied.written, namespace=ns.path,
                            request_id=request_id, unchanged=applied.unchanged, superseded=applied.superseded,
                            items=applied.outcomes)

    def write_rows(self, ns: Namespace, rows: list, *, label: str, consolidated: bool = True,
                   request_id: str | None = None, dry_run: bool = False, **callbacks: Any) -> Applied:
        """The bulk write path (write.bulk) with the namespace's consolidation (``consolidated``
        False: none, for benchmark and fixture loads), redone with the store's new embedder if a
        reembed swapped it meanwhile."""
        from .embed.calibrate import noise_floor

        mode = self.writer.consolidation(ns) if consolidated else "off"
        return self.embedders.redo_on_swap(lambda: bulk_apply(
            self.engine, self.embedders.current, ns, rows, label=label, mode=mode,
            floor=noise_floor(self.embedders.current) if mode != "off" else 0.0, request_id=request_id,
            dry_run=dry_run, **callbacks))

    def prepare_rows(self, ns: Namespace, rows: list, *, dry_run: bool = False) -> Any:
        """The first phase of ``write_rows`` (write.bulk.prepare), with the namespace's consolidation:
        for a caller that embeds its next batch while this one commits."""
        from .embed.calibrate import noise_floor
        from .write.bulk import prepare

        mode = self.writer.consolidation(ns)
        embedder = self.embedders.current
        return prepare(self.engine, embedder, ns, rows, mode=mode,
                       floor=noise_floor(embedder) if mode != "off" else 0.0, dry_run=dry_run)

    def commit_rows(self, prepared: Any, *, label: str, request_id: str, run: Any = None) -> Applied:
        """The second phase (write.bulk.commit): EmbedderChanged when a reembed swapped the store's
        embedder since the batch was embedded (the caller writes it again with ``write_rows``).
        ``run``: a write.consolidate.RunCopies of the batches this run wrote (``start_run``)."""
        from .write.bulk import commit

        return commit(self.engine, prepared, label=label, request_id=request_id, run=run)

    def start_run(self, ns: Namespace) -> Any:
        """Near-copy bookkeeping for a run of batches into ``ns`` (write.consolidate.RunCopies)."""
        from .embed.calibrate import noise_floor
        from .db.schema import memories
        from .write.consolidate import RunCopies

        with self.engine.connect() as conn:
            stored = conn.execute(sa.select(memories.c.id).where(
                memories.c.namespace == namespace(ns).path, memories.c.t_valid_to.is_(None),
                memories.c.erased_at.is_(None)).limit(1)).first() is not None
        return RunCopies(noise_floor(self.embedders.current), stored)

    def ingest_documents(self, ns: str | Namespace, roots: Sequence[Any], files: Sequence[Any], *,
                         fmt: str | None = None, prune: bool = False, strict: bool = False, dry_run: bool = False,
                         request_id: str | None = None, **progress: Any) -> Any:
        """Documents (Markdown, text, reStructuredText, HTML, PDF) into memories, one per file, keyed by
        path, re-run safely (intake.documents); returns an intake.documents.DocumentsReport."""
        from .intake.documents import ingest_documents

        return ingest_documents(self, namespace(ns), roots, files, fmt=fmt, prune=prune, strict=strict,
                                dry_run=dry_run, request_id=request_id or new_request_id(), **progress)

    def export_lines(self, ns: str | Namespace, *, subtree: bool = False, as_of: Any = None) -> Iterator[str]:
        """``ns`` (and with ``subtree`` its descendants) as JSONL lines (halomem.portable)."""
        from .instants import parse_instant
        from .portable import export_lines

        return export_lines(self.engine, namespace(ns), subtree=subtree, as_of=parse_instant(as_of))

    def import_lines(self, lines: Iterable[bytes | str], *, request_id: str | None = None,
                     only: str | Namespace | None = None) -> dict[str, int]:
        """Load an export in one transaction, re-embedded with this store's embedder (write.imports);
        ``only``: it must be that namespace's export alone."""
        from .write.imports import import_lines

        return import_lines(self.engine, self.embedders.current, lines, request_id=request_id,
                            only=namespace(only) if only is not None else None)

    def expire(self, *, request_id: str | None = None) -> dict[str, int]:
        """Close the validity of every memory a ttl policy has expired (write.retention); returns
        {namespace: rows closed}. Present reads already leave them out."""
        from .write.retention import expire

        return expire(self.engine, self.writer, request_id=request_id)

    def retire(self, ns: str | Namespace, ids: Sequence[str], *, reason: str,
               request_id: str | None = None) -> list[str]:
        """Close live memories' validity with no successor (gone from present searches, kept in history
        and as-of), audited with ``reason``; returns the ids closed."""
        return self.writer.retire(namespace(ns), ids, reason=reason, request_id=request_id)

    def remember_many(self, ns: str | Namespace, items: Sequence[dict[str, Any]], *,
                      request_id: str | None = None) -> IngestReport:
        """Write several memories (``{content, source?, provenance?}`` each) in one transaction: all
        of them or, when any is invalid, none (the error names the item)."""
        from .limits import MAX_BATCH
        from .write.bulk import ParsedRow
        from .write.validate import check_content, check_provenance, check_source

        if isinstance(items, (str, bytes, dict)) or not 1 <= len(items) <= MAX_BATCH:
            raise InvalidInputError(f"remember_many takes a list of 1 to {MAX_BATCH} memories")
        rows = []
        for number, item in enumerate(items, 1):
            if not isinstance(item, dict) or set(item) - {"content", "source", "provenance"}:
                raise InvalidInputError(f"memory {number}: give content, and optionally source and provenance")
            try:
                rows.append(ParsedRow(number, check_content(item.get("content")), check_source(item.get("source")),
                                      check_provenance(item.get("provenance"))))
            except InvalidInputError as exc:
                raise InvalidInputError(f"memory {number}: {exc}") from None
        return self._ingest_rows(namespace(ns), rows, [], "remember_many", None, None, request_id)

    def ingest_texts(self, ns: str | Namespace, texts: Sequence[str], *, source: str | None = None,
                     sources: Sequence[str | None] | None = None, label: str = "api") -> list[str]:
        """Bulk-write texts (benchmarks, fixtures) through the same validated COPY path.

        ``source`` applies to every text; ``sources`` gives one per text instead.
        """
        from .write.bulk import ParsedRow
        from .write.validate import check_content, check_source

        if sources is None:
            sources = [source] * len(texts)
        elif source is not None or len(sources) != len(texts):
            raise InvalidInputError("ingest_texts: give either one source or one per text")
        rows = [ParsedRow(i, check_content(t), check_source(src), {})
                for i, (t, src) in enumerate(zip(texts, sources), 1)]
        applied = self.write_rows(namespace(ns), rows, label=label, consolidated=False)
        return [o.id for o in applied.outcomes]

    def add_entity(self, ns: str | Namespace, name: str, aliases: Sequence[str] = (), *,
                   request_id: str | None = None) -> tuple[int, int]:
        """Register an entity (or add aliases); returns (entity id, mentions linked)."""
        return self.writer.add_entity(namespace(ns), name, aliases, request_id=request_id)

    def put_concept(self, ns: str | Namespace, path: str, content: str, *, request_id: str | None = None) -> None:
        """Create or replace an L3 concept of ``ns``."""
        self.writer.put_concept(namespace(ns), path, content, request_id=request_id)

    def materialize_concept(self, ns: str | Namespace, path: str, *, request_id: str | None = None) -> NewMemory:
        """Copy a visible concept into L2 as a memory of ``ns``."""
        return self.writer.materialize_concept(namespace(ns), path, request_id=request_id)

    # --- reads -------------------------------------------------------------------------------
    def visible_row(self, ns: str | Namespace, memory_id: str, *, index: MemoryIndex | None = None) -> MemoryRow | None:
        """The row ``memory_id`` if ``ns`` may see it (live or not), else None; read from the primary
        (a write's own-row check) unless ``index`` names a replica's."""
        with (index or self.index).reader() as reader:
            return reader.fetch(Scope(namespace(ns)), [memory_id], live=False).get(memory_id)

    def get(self, ns: str | Namespace, memory_id: str, *, after_lsn: int | None = None) -> MemoryRow:
        """One memory ``ns`` may see (current, superseded or erased), with its validity times."""
        row, _ = self.router.read(after_lsn, lambda index: self.visible_row(ns, memory_id, index=index))
        if row is None:
            raise NotFoundError(f"no memory {memory_id!r} visible from {ns}")
        return row

    def recent(self, ns: str | Namespace, limit: int = 20, cursor: str | None = None,
               sources: Sequence[str] | None = None, keys: Sequence[str] | None = None, *,
               within: str | None = None, after_lsn: int | None = None) -> Page:
        """The newest current memories ``ns`` may see, a page at a time (``cursor``: the previous
        page's ``next_cursor``; ``keys``: only the keyed memories with these keys; ``within``: only
        the memories of one namespace ``ns`` reads, itself or an ancestor)."""
        from .auth.rights import readable
        from .policy.store import expiries, lineage_policies

        ns = namespace(ns)
        within = readable(ns, within).path if within is not None else None
        with self.engine.connect() as conn:
            own = lineage_policies(conn, ns)
        scope = Scope(ns, check_sources(sources) or None, expired=expiries(own, ns, datetime.now(timezone.utc)))
        keys = check_keys(keys)
        limit = check_page(limit)
        before = cursors.decode(cursor) if cursor else None

        def read(index: MemoryIndex) -> list[MemoryRow]:
            with index.reader() as reader:
                return reader.recent(scope, limit + 1, before, keys, within)

        rows, _ = self.router.read(after_lsn, read)
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(rows, cursors.encode(rows[-1].t_valid_from, rows[-1].id) if more else None)

    def entities(self, ns: str | Namespace) -> list[dict[str, Any]]:
        """Entities visible from ``ns``: id, name, aliases."""
        with self.index.reader() as reader:
            known = reader.visible_entities(Scope(namespace(ns)))
        return [{"id": eid, "name": name, "aliases": list(aliases)} for eid, (name, aliases) in sorted(known.items())]

    def history(self, ns: str | Namespace, memory_id: str, *, after_lsn: int | None = None) -> list[MemoryRow]:
        """The supersedence chain through ``memory_id``, oldest first, as ``ns`` may see it."""
        def read(index: MemoryIndex) -> list[MemoryRow]:
            with index.reader() as reader:
                return reader.history(Scope(namespace(ns)), memory_id)

        chain, _ = self.router.read(after_lsn, read)
        if not chain:
            raise NotFoundError(f"no memory {memory_id!r} visible from {ns}")
        return chain

    def concepts(self, ns: str | Namespace, query: str, k: int = 10) -> list[ScoredRef]:
        query = check_query(query)
        with self.index.reader() as reader:
            [embedding] = self.embedders.follow(reader.store_embedder()).embed([query])
            return reader.concepts(Scope(namespace(ns)), query, embedding, k)

    def search(self, ns: str | Namespace, query: str, *, k: int = 10, token_budget: int = 2000,
               sources: Sequence[str] | None = None, driver: str | None = None,
               request_id: str | None = None, after_lsn: int | None = None,
               as_of: datetime | str | None = None) -> SearchResult:
        """Rank what ``ns`` may see (now, or ``as_of`` a past instant) with the policy's driver (or
        ``driver``); audited (halomem.search). With read replicas, the database that serves has
        replayed ``after_lsn`` (the caller's last write)."""
        return self.searcher.search(namespace(ns), query, k=k, token_budget=token_budget, sources=sources,
                                    driver=driver, request_id=request_id, after_lsn=after_lsn, as_of=as_of)

    def audit_event(self, ns: str | Namespace, action: str, record: dict[str, Any], request_id: str) -> None:
        """Append one audit row (its fields as data) in its own transaction (a refused request, a
        fallback); ``ns`` audit.STORE_NS is the store itself (no caller namespace, a store-wide
        operator command)."""
        with self.engine.begin() as conn:
            audit.append(conn, ns if ns == audit.STORE_NS else namespace(ns).path, action, record, request_id)

    # --- policy & audit ----------------------------------------------------------------------
    def set_policy(self, ns: str | Namespace, policy: dict[str, Any], *, request_id: str | None = None,
                   allow_unmounted: bool = False) -> Policy:
        """Route ``ns`` (and descendants without their own policy) to a driver or an A/B split."""
        [parsed] = self.set_policies({namespace(ns).path: policy}, request_id=request_id,
                                     allow_unmounted=allow_unmounted)
        return parsed

    def set_policies(self, policies: dict[str, Any], *, request_id: str | None = None,
                     allow_unmounted: bool = False, replace: bool = False) -> list[Policy]:
        """Set several namespaces' policies: every one validated first, then all written in one
        transaction (or none). Each sets the facets it names (a namespace's other facets stay), or,
        with ``replace`` (policy import), becomes the namespace's whole own policy. A driver not
        mounted here is refused (a typo would silently serve baseline) unless ``allow_unmounted``
        says it will be installed later; searches then fall back to baseline until it is."""
        items = [(namespace(ns), parse_policy(p, namespace(ns).path)) for ns, p in policies.items()]
        for _, parsed in items:
            drivers = [parsed.retriever] if parsed.retriever else [parsed.ab_test.a, parsed.ab_test.b] \
                if parsed.ab_test else []
            for name in drivers:
                if self.registry.has(name):
                    continue
                if not allow_unmounted:
                    raise InvalidInputError(f"no driver {name!r} is mounted here (mounted: "
                                            f"{', '.join(self.registry.names())}); to name one that will be "
                                            "installed later, allow unmounted drivers (--allow-unmounted)")
                log.warning("policy names driver %r, which is not mounted here: searches will serve baseline", name)
        return self.writer.set_policies([(ns, parsed.to_dict()) for ns, parsed in items], request_id=request_id,
                                        replace=replace)

    def clear_policy(self, ns: str | Namespace, *, request_id: str | None = None) -> bool:
        """Remove ``ns``'s own policy (it inherits again); False if it had none."""
        return self.writer.clear_policy(namespace(ns), request_id=request_id)

    def effective_policy(self, ns: str | Namespace) -> Policy:
        """The policy that routes ``ns``'s searches and the namespace it comes from."""
        with self.engine.connect() as conn:
            return effective_policy(conn, namespace(ns))

    def policies(self) -> list[Policy]:
        with self.engine.connect() as conn:
            return list_policies(conn)

    def audit_tail(self, n: int = 20, action: str | None = None,
                   subtree: str | Namespace | None = None, before: int | None = None) -> list[audit.AuditRow]:
        """The newest audit rows (of ``subtree`` and below, when given; older than seq ``before``),
        oldest first."""
        with self.engine.connect() as conn:
            return audit.tail(conn, n, action, str(subtree) if subtree is not None else None, before)

    def who_saw(self, memory_id: str, subtree: str | Namespace | None = None):  # noqa: ANN201 - results.WhoSaw
        """Every search that was returned a version of ``memory_id`` (made in ``subtree`` and below)."""
        from .audit.seen import who_saw

        with self.engine.connect() as conn:
            return who_saw(conn, memory_id, str(subtree) if subtree is not None else None)

    def replay(self, seq: int, subtree: str | Namespace | None = None, request_id: str | None = None):  # noqa: ANN201
        """Re-run the search at audit ``seq`` as of its instant with its driver, k, budget and
        sources (audit.replay); made in ``subtree`` and below only, when given. Returns results.Replay."""
        from .audit import replay as replays
        from .drivers import DriverRegistry

        with self.engine.connect() as conn:
            then = replays.recorded(conn, seq, str(subtree) if subtree is not None else None)
        mounted = self.registry.has(then.driver)
        ns = namespace(then.namespace)
        now = self.searcher.search(ns, then.query, k=then.k, token_budget=then.budget, sources=then.sources,
                                   driver=then.driver if mounted else DriverRegistry.FALLBACK,
                                   as_of=then.as_of, replaying=seq, request_id=request_id)
        with self.index.reader() as reader:
            embedder_now = self.embedders.follow(reader.store_embedder()).name
            rows = reader.fetch(Scope(ns), [r.ref for r in then.refs if r.tier == "L2"], live=False)
        version_now = self.registry.version(now.driver)
        return replays.compare(then, now, embedder_now=embedder_now, mounted=mounted, driver_version_now=version_now,
                               erased=[i for i, row in rows.items() if row.erased_at is not None])

    def namespace_counts(self, subtree: str | Namespace) -> dict[str, int]:
        """Live memories per namespace of ``subtree`` and below (what its admin administers)."""
        with self.index.reader() as reader:
            counts = reader.namespace_counts(str(subtree))
        return {str(subtree): 0, **counts} if str(subtree) not in counts else counts

    def feedback(self, caller: "Caller", about: str, ref: str, verdict: str, note: str | None = None, *,
                 request_id: str | None = None):  # noqa: ANN201 - results.Feedback
        """``caller``'s verdict on a ref the search of request ``about`` returned (halomem.feedback)."""
        from .feedback import give

        with self.engine.begin() as conn:
            return give(conn, caller, about, ref, verdict, note, request_id or new_request_id())

    def prune_queries(self, retention_days: float) -> int:
        """Search query texts past their retention (audit.seen); the chain keeps their digests."""
        from .audit.seen import prune

        with self.engine.begin() as conn:
            return prune(conn, retention_days)

    def audit_verify(self, expected: Sequence[Head] = (), *, incremental: bool = False,
                     pause: Callable[[float], None] | None = None) -> audit.VerifyResult:
        """Recompute the hash chain; the heads recorded outside the database (and ``expected``) must
        still be in it, so deleting the newest rows or rewriting the chain is caught. Records the
        verified position. ``incremental``: recompute only the rows after the last position a
        verification proved (the admin status check: its cost grows with the new rows, not the trail;
        `audit verify` and the server's daily check recompute it all). ``pause``: see audit.verify."""
        from .audit import heads

        start = heads.verified(self.settings.home) if incremental else None
        with self.engine.connect() as conn:
            result = audit.verify(conn, batch=1000 if pause else 5000, expected=[*heads.read(self.settings.home),
                                                                                  *expected], start=start, pause=pause)
        if result.ok and result.head_seq is not None:
            verified = Head(result.head_seq, result.head_hash)
            heads.record(self.settings.home, verified)
            heads.record_verified(self.settings.home, verified)
        return result

    def maintain_audit(self, *, full: bool) -> audit.VerifyResult:
        """A server's own check of the chain (all of it, or from the last verified position), yielding
        the interpreter between batches to the requests it serves; a broken chain is logged."""
        result = self.audit_verify(incremental=not full, pause=audit.log.yield_interpreter)
        if not result.ok:
            log.error("audit chain broken at row %s: %s", result.first_bad_seq, result.reason)
        return result

    def record_audit_head(self) -> None:
        """Keep the chain's newest seq:hash in $HALOMEM_HOME (outside the database: audit.heads)."""
        from .audit import heads

        try:
            with self.engine.connect() as conn:
                heads.record(self.settings.home, audit.log.head(conn))
        except OSError as exc:
            log.warning("audit head not recorded in %s: %s", self.settings.home, exc.strerror or exc)

    def case_twins(self, ns: str | Namespace) -> list[str]:
        """Namespaces holding live rows whose path equals ``ns`` but for case (namespaces are case
        sensitive: `Acme/Eng` is not `acme/eng`); for the operator's hint when a search finds nothing."""
        from .db.schema import memories

        path = namespace(ns).path
        with self.engine.connect() as conn:
            return list(conn.execute(sa.select(memories.c.namespace).distinct().where(
                sa.func.lower(memories.c.namespace) == path.lower(), memories.c.namespace != path,
                memories.c.t_valid_to.is_(None), memories.c.erased_at.is_(None)).limit(3)).scalars())

    # --- namespace indexes (see db.migrations.create_namespace_indexes) ---------------------
    def index_namespace(self, ns: str | Namespace) -> bool:
        """Give one large namespace its own partial HNSW and GIN indexes; False if it had them."""
        try:
            with self.engine.begin() as conn:
                return migrations.create_namespace_indexes(conn, namespace(ns))
        finally:
            self.index.catalog.forget()

    def drop_namespace_index(self, ns: str | Namespace) -> bool:
        try:
            with self.engine.begin() as conn:
                return migrations.drop_namespace_indexes(conn, namespace(ns))
        finally:
            self.index.catalog.forget()

    def namespace_indexes(self) -> list[str]:
        with self.engine.connect() as conn:
            return migrations.namespace_indexes(conn)
