"""build_scoped_view: the only constructor of a ScopedView.

The view is a driver's whole world. Every method delegates to the index (which applies the one
ACL + validity predicate) and records the refs it hands out, so the kernel can drop any ref a
driver returns that this view did not admit during this call.
"""
from __future__ import annotations

import time
from typing import Literal, Sequence

from ..embed import Embedder
from ..embed.early import EarlyQuery
from ..index import IndexReader, Scope
from ..types import Candidate, CorpusStats, Entity, EntityFact, Namespace, ScoredRef, VectorHit

DEFAULT_CANDIDATES = 500
MAX_LIMIT = 5000


def _bounded(n: int) -> int:
    return max(0, min(int(n), MAX_LIMIT))


class KernelScopedView:
    __slots__ = ("namespace", "_reader", "_scope", "_embedder", "_admitted", "_last_embedded", "_early",
                 "_embedder_failed", "_waited_ms")

    def __init__(self, reader: IndexReader, scope: Scope, embedder: Embedder, early: EarlyQuery | None = None) -> None:
        self.namespace: Namespace = scope.namespace
        self._reader = reader
        self._scope = scope
        self._embedder = embedder
        self._admitted: set[str] = set()
        self._last_embedded: tuple[str, tuple[float, ...]] | None = None
        self._early = early if early is not None and early.serves(embedder) else None
        self._embedder_failed: Exception | None = None
        self._waited_ms = 0.0

    def _admit(self, refs: Sequence[str]) -> None:
        self._admitted.update(refs)

    def candidates(self, limit: int = DEFAULT_CANDIDATES) -> list[Candidate]:
        out = self._reader.candidates(self._scope, _bounded(limit))
        self._admit([c.ref for c in out])
        return out

    def lexical_candidates(self, query: str, limit: int) -> list[Candidate]:
        out = self._reader.lexical_candidates(self._scope, str(query), _bounded(limit))
        self._admit([c.ref for c in out])
        return out

    def corpus_stats(self, terms: Sequence[str]) -> CorpusStats:
        """BM25's corpus statistics over the rows this caller may read (and no other row)."""
        return self._reader.corpus_stats(self._scope, [str(t) for t in terms])

    def similarity_floor(self) -> float:
        """The cosine this view's embedder gives unrelated texts (embed.calibrate): a vector hit
        below it is no evidence that a memory matches. It depends on the embedder only, never on rows."""
        from ..embed.calibrate import noise_floor

        return noise_floor(self._embedder)

    def vector_search(self, embedding: Sequence[float], k: int) -> list[VectorHit]:
        out = self._reader.vector_search(self._scope, embedding, _bounded(k))
        self._admit([h.ref for h in out])
        return out

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        texts = [str(t) for t in texts]
        if len(texts) == 1:
            return [self._embedding(texts[0])]
        return self._embedder.embed(texts)

    def _embedding(self, text: str) -> list[float]:
        """One text's embedding, the last one remembered: a driver embeds its query and then asks
        for concepts of the same query, which embedded it again (MiniLM: milliseconds each)."""
        if self._last_embedded is None or self._last_embedded[0] != text:
            try:
                if self._early is not None and self._early.text == text:
                    started = time.perf_counter()
                    vector = self._early.vector()
                    self._waited_ms += (time.perf_counter() - started) * 1000
                else:
                    [vector] = self._embedder.embed([text])
            except Exception as exc:
                self._embedder_failed = exc  # the kernel's failure, even when a driver's call met it
                raise
            self._last_embedded = (text, tuple(vector))
        return list(self._last_embedded[1])  # a copy: what a driver does to it stays its own

    def concepts(self, query: str, k: int) -> list[ScoredRef]:
        out = self._reader.concepts(self._scope, str(query), self._embedding(str(query)), _bounded(k))
        self._admit([c.ref for c in out])
        return out

    def entities(self) -> list[Entity]:
        return self._reader.entities(self._scope, MAX_LIMIT)

    def entity_facts(self, mention: str, hops: Literal[1, 2]) -> list[EntityFact]:
        if hops not in (1, 2):
            raise ValueError("hops must be 1 or 2")
        out = self._reader.entity_facts(self._scope, str(mention), hops)
        self._admit([f.ref for f in out])
        return out


def build_scoped_view(reader: IndexReader, scope: Scope, embedder: Embedder,
                      early: EarlyQuery | None = None) -> KernelScopedView:
    """``early``: the query's embedding a search started as it began (embed.early); the view uses it
    only when it is ``embedder``'s."""
    return KernelScopedView(reader, scope, embedder, early)


def embed_query(view: KernelScopedView, query: str) -> list[float]:
    """The query's embedding, kernel-side (kernel-side bookkeeping): the driver's own
    view.embed([query]) is answered from the view, and an embedder that fails (a remote service
    down) fails as the kernel's error, not as the driver's."""
    return view._embedding(query)


def embedder_failure(view: KernelScopedView) -> Exception | None:
    """What the embedder raised when this view embedded (kernel-side bookkeeping): a driver that met
    it while planning failed because of the kernel's embedder, not its own fault."""
    return view._embedder_failed


def waited_for_embedding_ms(view: KernelScopedView) -> float:
    """How long this view waited for an embedding started before it (kernel-side bookkeeping)."""
    return view._waited_ms


def admitted_refs(view: KernelScopedView) -> frozenset[str]:
    """The refs this view handed out so far (kernel-side bookkeeping)."""
    return frozenset(view._admitted)
