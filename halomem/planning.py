"""The one way halomem runs a retriever driver, host side: a fresh view for one scope, the query
embedded with the store's embedder when first asked for (on a worker from the search's start where
that pays: embed.early; its failure is the kernel's, not the driver's), ``plan`` called and timed
(the embedding left out), the answer checked, the refs its view never handed out
dropped, each hit scored by the kernel (halomem.relevance: the calibrated chance it is relevant,
whatever the driver's own scale) and the list ended where relevance ends. Search, the shadow arm,
eval, conformance and the benchmarks all call ``run_driver``, so what they measure is what a
caller is served.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

from .drivers.view import admitted_refs, build_scoped_view, embed_query, embedder_failure, waited_for_embedding_ms

from .embed.calibrate import noise_floor
from .embed.early import EarlyQuery
from .embed.registry import ActiveEmbedder
from .errors import DriverError
from .index import IndexReader, Scope
from .relevance import Features, cut_tail, score
from .types import RetrieverDriver, RetrieverQuery, ScoredRef


@dataclass(frozen=True)
class DriverPlan:
    refs: list[ScoredRef]  # served: what the view admitted, in the driver's order, relevance-scored, tail cut
    returned: list[ScoredRef]  # everything plan() returned, its own scores (the conformance kit judges it)
    admitted: list[ScoredRef]  # the admitted refs relevance-scored, before the tail cut
    features: dict[str, Features]  # each admitted ref's measurements (bench calibration fits on them)
    ms: float  # plan()'s own time, the query's embedding (or the wait for it) excluded
    embedder: str  # the store's, which embedded the query
    embedding_wait_ms: float = 0.0  # the wait for the query's embedding started early: what the reads before did not hide

    @property
    def dropped(self) -> int:
        """Refs the driver returned that its view never handed out."""
        return len(self.returned) - len(self.admitted)


class PlanFailed(DriverError):
    """``plan`` raised: ``cause`` is what it raised (search falls back on DriverUnavailableError)."""

    def __init__(self, name: str, cause: Exception) -> None:
        super().__init__(str(cause) if isinstance(cause, DriverError)
                         else f"driver {name!r} failed: {type(cause).__name__}: {cause}")
        self.cause = cause


def checked(name: str, refs: object) -> list[ScoredRef]:
    """A driver's answer, or a DriverError saying what is wrong with it."""
    if not isinstance(refs, list) or not all(isinstance(r, ScoredRef) for r in refs):
        raise DriverError(f"driver {name!r} returned something other than a list of ScoredRef")
    bad = [r for r in refs if r.tier not in ("L2", "L3")]
    if bad:
        raise DriverError(f"driver {name!r} returned tier {bad[0].tier!r} (must be 'L2' or 'L3')")
    return refs


def run_driver(reader: IndexReader, scope: Scope, embedders: ActiveEmbedder, driver: RetrieverDriver, query: str,
               k: int, budget: int, early: EarlyQuery | None = None) -> DriverPlan:
    """``driver`` over a fresh view of ``scope`` read through ``reader``, the query embedded by the
    store's embedder as this snapshot names it (a reembed may have swapped it), so the query and the
    rows share one space. ``early``: the query's embedding the search started (embed.early); without
    it one is made here. Either is waited for when the driver or the relevance features first need it.
    The embedder's failure propagates as it is (the kernel's), even when the driver met it; whatever
    else ``plan`` raises comes as PlanFailed, a DriverError."""
    name = getattr(driver, "name", type(driver).__name__)
    embedder = embedders.follow(reader.store_embedder())
    view = build_scoped_view(reader, scope, embedder, early or EarlyQuery(embedder, query))
    started = time.perf_counter()
    try:
        returned = driver.plan(RetrieverQuery(query=query, view=view, token_budget=budget, k=k))
    except Exception as exc:
        if (failure := embedder_failure(view)) is not None:
            raise failure from None
        raise PlanFailed(name, exc) from exc
    ms = (time.perf_counter() - started) * 1000 - waited_for_embedding_ms(view)
    vector = embed_query(view, query)
    waited = waited_for_embedding_ms(view)
    returned = checked(name, returned)
    handed_out = admitted_refs(view)
    admitted = [r for r in returned if r.ref in handed_out]
    features = measured(reader, scope, query, vector, admitted, noise_floor(embedder))
    scored = [replace(r, score=score(features[r.ref])) for r in admitted]
    served = scored[:cut_tail([features[r.ref] for r in scored])]
    return DriverPlan(served, returned, scored, features, ms, embedder.name, waited)


def measured(reader: IndexReader, scope: Scope, query: str, vector: list[float], refs: list[ScoredRef],
             floor: float) -> dict[str, Features]:
    """Each ref's relevance features (a ref the reader no longer finds measures nothing: 0, 0)."""
    raw = reader.relevance_features(scope, query, vector, [r.ref for r in refs if r.tier == "L2"],
                                    [r.ref for r in refs if r.tier == "L3"])
    return {r.ref: Features.measured(*raw.get(r.ref, (floor, 0.0)), floor) for r in refs}
