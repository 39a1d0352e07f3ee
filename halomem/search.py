"""Search: policy -> driver run by planning.run_driver (a fresh ScopedView, refs it did not admit dropped) -> content
fetched by the kernel's own reads -> audit rows. A DriverUnavailableError re-plans with baseline
over the same scope (audited as a fallback); any other driver exception fails the request with a
DriverError. The kernel composes this; it holds no search logic itself.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Callable, Sequence

import sqlalchemy as sa

from . import audit
from .instants import parse_instant
from .audit import seen as seen_log
from .drivers import DriverRegistry, DriverUnavailableError
from .embed.early import EarlyQuery
from .embed.registry import ActiveEmbedder
from .errors import DriverError, InvalidInputError
from .db.replicas import ReadRouter
from .index import IndexReader, MemoryIndex, Scope
from .limits import check_query, check_search_bounds, check_sources
from .planning import PlanFailed, run_driver
from .policy import choose_driver
from .policy.store import effective_of, expiries, lineage_policies
from .results import Hit, SearchResult
from .types import Namespace, RetrieverDriver, ScoredRef
from .write.writer import new_request_id

log = logging.getLogger("halomem")


@dataclass(frozen=True)
class Fallback:
    """A search served by baseline instead of ``driver``, and why."""

    driver: str
    reason: str


@dataclass(frozen=True)
class Planned:
    refs: list[ScoredRef]  # those its view handed out, in its order
    served: str  # the driver whose refs these are
    dropped: int  # refs it returned that its view never handed out
    fallback: Fallback | None
    warnings: list[str]
    embedder: str  # the store's, which embedded the query


class DriverWarnings(logging.Handler):
    """Collects warnings logged under the "halomem" logger by this thread during one plan() call,
    so what a driver noticed (a retried sidecar, stray refs) lands in the search's audit row."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []
        self._thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self._thread:
            self.messages.append(record.getMessage())

    def __enter__(self) -> "DriverWarnings":
        log.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        log.removeHandler(self)


class Searcher:
    """One kernel's search path over its engine, index, mounted drivers and embedder."""

    def __init__(self, engine: sa.Engine, router: ReadRouter, registry: DriverRegistry,
                 embedders: ActiveEmbedder) -> None:
        self.engine = engine
        self.router = router  # which database serves the read (db.replicas)
        self.registry = registry
        self.embedders = embedders  # the store's, read in each search's snapshot (a reembed may swap it)
        # called with (driver served, seconds, requested driver when it fell back, database) per search
        self.observers: list[Callable[[str, float, str | None, str], None]] = []

    def search(self, ns: Namespace, query: str, *, k: int = 10, token_budget: int = 2000,
               sources: Sequence[str] | None = None, driver: str | None = None,
               request_id: str | None = None, after_lsn: int | None = None,
               as_of: datetime | str | None = None, replaying: int | None = None) -> SearchResult:
        """Rank what ``ns`` may see with the policy's driver (or ``driver``); audited. ``after_lsn``:
        the caller's last write, which the database that serves must have. ``as_of``: the store as
        it stood then (halomem.as_of; concepts keep no history and are not returned). ``replaying``:
        the audit seq of the search this re-runs (audited as a ``replay``, not as a search anyone
        was handed)."""
        query, sources, when = check_query(query), check_sources(sources), parse_instant(as_of)
        check_search_bounds(k, token_budget)
        if driver is not None and not self.registry.has(driver):  # the caller's mistake, not a driver's failure
            raise InvalidInputError(f"unknown driver {str(driver)[:100]!r}"
                                    f" (mounted: {', '.join(self.registry.names())})")
        request_id = request_id or new_request_id()
        started = time.perf_counter()
        early = EarlyQuery(self.embedders.current, query)  # embedded while the policy and the lexical lane are read
        with self.engine.connect() as conn:
            own = lineage_policies(conn, ns)
        policy = effective_of(own)
        scope = Scope(ns, sources or None, when,
                      expiries(own, ns, datetime.now(timezone.utc)) if when is None else ())
        requested = driver or choose_driver(policy, query)
        shadow = None if driver or replaying is not None or not policy.ab_test else policy.ab_test.shadowed(query)
        chosen, unmounted = self.registry.resolve(requested)
        used: dict[str, str] = {}
        shadowed: dict[str, object] = {}

        def read(index: MemoryIndex) -> tuple[Planned, SearchResult]:
            with index.reader() as reader:
                planned = self._plan(reader, scope, chosen, query, k, token_budget, early)
                used["embedder"] = planned.embedder
                if shadow:
                    shadowed.update(self._shadow(reader, scope, shadow, query, k, token_budget,
                                                 [r.ref for r in planned.refs], early))
                return planned, self._materialize(reader, scope, query, planned, requested, request_id)

        try:  # a replica that fails mid-read is set aside and the primary answers (ReadRouter.read)
            (planned, result), database = self.router.read(after_lsn, read)
        except DriverError as exc:
            self._audit(ns, "search", {"outcome": "failed", "driver": chosen.name, "error": str(exc)[:200]},
                        request_id)
            raise
        result.elapsed_ms = (time.perf_counter() - started) * 1000
        result.as_of = when.isoformat() if when else None
        notes = [Fallback(requested, "unmounted")] if unmounted else []
        notes += [planned.fallback] if planned.fallback else []
        if notes:
            result.fallback = f"{requested}->baseline"
        if replaying is not None:  # an operator's re-run: nobody was handed these refs
            self._audit(ns, "replay", {"outcome": "ok", "of": replaying, "returned": len(result.hits),
                                       "driver": result.driver,
                                       "driver_version": self.registry.version(result.driver)}, request_id)
            return result
        for note in notes:
            log.warning("driver_fallback=%s->baseline reason=%s", note.driver, note.reason)
            self._audit(ns, "fallback", {"outcome": "to-baseline", "driver": note.driver, "reason": note.reason},
                        request_id)
        record: dict[str, object] = {
            "outcome": "ok", "returned": len(result.hits), "tokens": result.tokens, "driver": result.driver,
            "driver_version": self.registry.version(result.driver), "ms": round(result.elapsed_ms, 2),
            "requested": requested, "chosen_by": "caller" if driver else "policy"}
        if result.dropped:
            record["dropped"] = result.dropped
        if result.warnings:
            record["driver_warnings"] = "; ".join(result.warnings)[:500]
        if self.router.enabled:
            record["db"] = database
        if when:
            record["as_of"] = result.as_of
        if sources:  # what replay needs to ask the same question
            record["sources"] = list(sources)
        record.update(shadowed)
        self._audit_search(ns, record, request_id, result, query, k, token_budget, used.get("embedder", "-"))
        for observe in self.observers:
            observe(result.driver, result.elapsed_ms / 1000, requested if result.fallback else None, database)
        return result

    def _plan(self, reader: IndexReader, scope: Scope, driver: RetrieverDriver, query: str, k: int,
              budget: int, early: EarlyQuery) -> "Planned":
        """Run the driver (planning.run_driver); DriverUnavailableError re-plans with baseline. The
        query's embedding, started as the search began, is the kernel's: its failures are the
        kernel's own."""
        with DriverWarnings() as warned:
            def run(d: RetrieverDriver, note: Fallback | None) -> Planned:
                plan = run_driver(reader, scope, self.embedders, d, query, k, budget, early)
                return Planned(plan.refs, d.name, plan.dropped, note, warned.messages, plan.embedder)

            try:
                return run(driver, None)
            except PlanFailed as exc:
                if not isinstance(exc.cause, DriverUnavailableError):
                    raise exc.cause if isinstance(exc.cause, DriverError) else exc from None
                if driver.name == DriverRegistry.FALLBACK:
                    raise DriverError(f"baseline driver unavailable: {exc.cause}") from None
                note = Fallback(driver.name, str(exc.cause)[:200] or "unavailable")
            return run(self.registry.get(DriverRegistry.FALLBACK), note)

    def _shadow(self, reader: IndexReader, scope: Scope, name: str, query: str, k: int, budget: int,
                served: list[str], early: EarlyQuery) -> dict[str, object]:
        """The shadow arm beside the answer (policy ab_test shadow): its refs, their overlap@k with
        what was served and its plan time, for the audit row only. Nobody is handed these refs, and
        a shadow that fails or is not mounted never touches the answer."""
        if not self.registry.has(name):
            return {"shadow": name, "shadow_error": "unmounted"}
        try:
            plan = run_driver(reader, scope, self.embedders, self.registry.get(name), query, k, budget, early)
        except Exception as exc:  # noqa: BLE001 - a shadow's failure is recorded, never raised
            return {"shadow": name, "shadow_error": type(exc).__name__}
        kept = plan.refs[:k]
        overlap = len({r.ref for r in kept} & set(served[:k])) / k
        return {"shadow": name, "shadow_ms": round(plan.ms, 2), "shadow_overlap": round(overlap, 3),
                "shadow_refs": [[i, r.tier, r.ref, round(r.score, seen_log.SCORE_DIGITS)]
                                for i, r in enumerate(kept, 1)]}

    def _materialize(self, reader: IndexReader, scope: Scope, query: str, planned: "Planned", requested: str,
                     request_id: str) -> SearchResult:
        """Fetch the admitted refs' content from the kernel's own reads."""
        kept, served = planned.refs, planned.served
        rows = reader.fetch(scope, [r.ref for r in kept if r.tier == "L2"])
        result = SearchResult(query, scope.namespace.path, served, requested, request_id,
                              dropped=planned.dropped, warnings=planned.warnings)
        for r in kept:
            if r.tier == "L2":
                row = rows.get(r.ref)
                if row is None:
                    result.dropped += 1
                    continue
                hit = Hit(0, r.score, "L2", r.ref, row.id, row.namespace, row.source, row.content, r.token_estimate,
                          row.t_valid_from.isoformat(), row.provenance or {})
            else:
                concept = reader.concept(scope, r.ref)
                if concept is None:
                    result.dropped += 1
                    continue
                hit = Hit(0, r.score, "L3", r.ref, concept["materialized_id"], concept["namespace"],
                          None, concept["content"], r.token_estimate, concept["updated_at"].isoformat())
            result.hits.append(hit)
        result.hits = [replace(h, rank=i) for i, h in enumerate(result.hits, 1)]
        if result.dropped:
            log.warning("driver %r returned %d ref(s) its view did not admit; dropped", served, result.dropped)
        return result


    def _audit_search(self, ns: Namespace, record: dict[str, object], request_id: str, result: SearchResult,
                      query: str, k: int, budget: int, embedder: str) -> None:
        """The search's row names what it returned and how (audit.seen), with its query's salted
        digest; the refs and the query text go beside it in the same transaction."""
        trace = audit.current_trace()
        returned = [seen_log.Seen(h.rank, h.tier, h.ref, h.id, h.score) for h in result.hits]
        salt = seen_log.new_salt()
        record.update({"k": k, "budget": budget, "embedder": embedder, "via": trace.transport if trace else "local",
                       "query": seen_log.query_digest(salt, query), "refs": seen_log.refs_field(returned)})
        with self.engine.begin() as conn:
            audit.append(conn, ns.path, "search", record, request_id, beside=seen_log.beside_row(returned, salt, query))

    def _audit(self, ns: Namespace, action: str, record: dict[str, object], request_id: str) -> None:
        with self.engine.begin() as conn:
            audit.append(conn, ns.path, action, record, request_id)
