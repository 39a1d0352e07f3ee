"""The driver contract: every type a retriever cartridge may see.

This module must not import anything from the kernel: a driver imports it, and whatever it
imports becomes reachable from driver code.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal, NewType, Protocol, Sequence, runtime_checkable

Tier = Literal["L2", "L3"]
MemoryId = NewType("MemoryId", str)

NAMESPACE_MAX_LENGTH = 255
NAMESPACE_MAX_DEPTH = 16
_SEGMENT = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class InvalidNamespace(ValueError):
    """A namespace string that is not a `/`-separated path of valid segments."""


@dataclass(frozen=True, order=True)
class Namespace:
    """A validated `/`-separated namespace path such as ``acme/eng``."""

    path: str

    def __post_init__(self) -> None:
        problem = namespace_problem(self.path)
        if problem:
            raise InvalidNamespace(problem)

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.path.split("/"))

    def lineage(self) -> list[str]:
        """This namespace and every ancestor, root first: the paths a caller may read."""
        segs = self.segments
        return ["/".join(segs[: i + 1]) for i in range(len(segs))]

    def __str__(self) -> str:
        return self.path


def namespace_problem(path: object) -> str | None:
    """Why ``path`` is not a valid namespace, or None when it is."""
    if not isinstance(path, str):
        return "namespace must be a string"
    shown = path if len(path) <= 80 else path[:77] + "..."
    if not path:
        return "namespace is empty"
    if len(path) > NAMESPACE_MAX_LENGTH:
        return f"namespace longer than {NAMESPACE_MAX_LENGTH} characters"
    if path.startswith("/") or path.endswith("/"):
        return f"namespace {shown!r} has a leading or trailing '/'"
    segments = path.split("/")
    if len(segments) > NAMESPACE_MAX_DEPTH:
        return f"namespace {shown!r} is deeper than {NAMESPACE_MAX_DEPTH} segments"
    for seg in segments:
        if not seg:
            return f"namespace {shown!r} has an empty segment"
        if seg in (".", ".."):
            return f"namespace {shown!r} has a '.' or '..' segment"
        if not _SEGMENT.match(seg):
            return (
                f"namespace {shown!r}: segment {seg[:40]!r} may hold only letters, digits, '-', '_', '.'"
                " (1-64 characters)"
            )
    return None


def estimate_tokens(text: str) -> int:
    """The kernel's token arithmetic: ceil(len/4). Drivers must use this so budgets agree."""
    return math.ceil(len(text) / 4)


@dataclass(frozen=True)
class Candidate:
    ref: str
    content: str
    source: str | None = None  # where the memory came from (a session, a document); optional context
    # lexical_candidates only: the row's BM25 over the corpus the caller may see (None elsewhere)
    score: float | None = None
    # its place among its source's memories (1 = written first; None without a source): the memories
    # at position +/- 1 of the same source are its neighbours (the turn before and after, the next chunk)
    position: int | None = None


@dataclass(frozen=True)
class CorpusStats:
    """BM25's corpus-level inputs over exactly the rows the caller may read (view.corpus_stats)."""

    documents: int
    average_length: float  # in lexemes (stemmed, stopwords dropped)
    document_frequency: dict[str, int]  # per term asked for: visible rows holding its stem


@dataclass(frozen=True)
class VectorHit:
    ref: str
    content: str
    score: float  # cosine similarity
    source: str | None = None
    position: int | None = None  # as Candidate.position


@dataclass(frozen=True)
class Entity:
    """A named entity the caller may see, with its other names (view.entities)."""
    name: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class EntityFact:
    ref: str
    content: str
    entity: str
    hop: int = 1


@dataclass(frozen=True)
class Capabilities:
    graph: bool = False
    streaming: bool = False


@dataclass(frozen=True)
class ScoredRef:
    id: MemoryId | None  # None for L3 concepts not yet materialized
    tier: Tier
    ref: str  # L2: the memory id; L3: the concept path
    score: float  # higher is better, normalized 0..1
    content: str
    token_estimate: int


@runtime_checkable
class ScopedView(Protocol):
    """One caller's entire world, as handed to a driver. Only the kernel constructs one."""

    namespace: Namespace

    def candidates(self, limit: int = 500) -> list[Candidate]: ...

    def vector_search(self, embedding: Sequence[float], k: int) -> list[VectorHit]: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    def concepts(self, query: str, k: int) -> list[ScoredRef]: ...

    def entity_facts(self, mention: str, hops: Literal[1, 2]) -> list[EntityFact]: ...

    # Optional, feature-detect them:
    #   lexical_candidates(query: str, limit: int) -> list[Candidate]  (best BM25 first, with .score)
    #   corpus_stats(terms: Sequence[str]) -> CorpusStats
    #   entities() -> list[Entity]  (the named entities the caller may see)
    #   similarity_floor() -> float  (the cosine the embedder gives unrelated texts: a vector hit
    #                                 below it is no evidence; shipped drivers do not return one
    #                                 that has no lexical evidence either)


@dataclass(frozen=True)
class RetrieverQuery:
    query: str
    view: ScopedView
    token_budget: int
    k: int


@runtime_checkable
class RetrieverDriver(Protocol):
    name: str

    def capabilities(self) -> Capabilities: ...

    def plan(self, q: RetrieverQuery) -> list[ScoredRef]: ...


def rank_key(hit: ScoredRef) -> tuple[float, str]:
    """Sort key for the contract's order: score descending, ref ascending as the tiebreak."""
    return (-hit.score, hit.ref)


def fit_budget(ranked: Sequence[ScoredRef], k: int, token_budget: int) -> list[ScoredRef]:
    """Take the top-k that fit ``token_budget``; the top hit always survives, even alone."""
    out: list[ScoredRef] = []
    total = 0
    for hit in ranked[: max(k, 0)]:
        if out and total + hit.token_estimate > token_budget:
            continue
        out.append(hit)
        total += hit.token_estimate
    return out
