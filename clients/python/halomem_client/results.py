"""What operations return, shared by the kernel, the HTTP API, the client and the CLI.

Standard library only (and typing_extensions): the remote client and the CLI's remote mode import
these without the database stack.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Optional

from typing_extensions import TypedDict  # pydantic builds MCP output schemas from these; below 3.12 it needs this one

SCORE_DIGITS = 4  # a score's JSON precision: 0..1, four places tell every rank apart a model needs


# --- the JSON shapes, once: what to_dict returns and what MCP publishes as each tool's outputSchema
class HitJSON(TypedDict):
    rank: int
    score: float
    tier: str
    ref: str
    id: Optional[str]
    namespace: Optional[str]
    source: Optional[str]
    content: str
    token_estimate: int
    valid_from: Optional[str]
    provenance: dict[str, Any]  # where the memory came from (a document's path and title, a turn's session)
    speaker: Optional[str]  # a turn of a conversation (intake.chat): who said it,
    session: Optional[str]  # in which session,
    said_at: Optional[str]  # and when (as the transcript gives it); null for other memories


class SearchJSON(TypedDict):
    query: str
    namespace: str
    driver: str
    requested_driver: str
    fallback: Optional[str]
    request_id: str
    tokens: int
    dropped: int
    elapsed_ms: float
    as_of: Optional[str]  # the instant searched (ISO 8601 UTC); null: now
    hits: list[HitJSON]


class SimilarJSON(TypedDict):
    id: str  # a live memory of the namespace the written text nearly copies
    score: float  # the cosine of their vectors


class NewMemoryJSON(TypedDict):
    id: str  # the memory holding the text now: the new one, or the one already live (status unchanged)
    namespace: str
    source: Optional[str]
    request_id: Optional[str]
    status: str  # created | unchanged (the same text was live: nothing written) | similar (not written)
    similar: list[SimilarJSON]  # near-copies among the namespace's live memories (write.consolidate)


class SupersededJSON(NewMemoryJSON):
    supersedes: str


class MemoryJSON(TypedDict):
    id: str
    namespace: str
    content: str
    source: Optional[str]
    tier: str
    t_valid_from: str
    t_valid_to: Optional[str]
    supersedes: Optional[str]
    superseded_by: Optional[str]
    erased_at: Optional[str]
    provenance: dict[str, Any]


class ChainJSON(TypedDict):
    chain: list[MemoryJSON]


class PageJSON(TypedDict):
    memories: list[MemoryJSON]
    next_cursor: Optional[str]


class ErasedJSON(TypedDict):
    erased: str
    namespace: str
    request_id: Optional[str]
    versions: list[str]  # the versions this request erased: the memory, or with chain every version left


class BatchJSON(TypedDict):
    written: int
    ids: list[str]  # the memories written
    namespace: str
    request_id: Optional[str]
    items: list["RowOutcomeJSON"]  # what became of each memory asked for, in order


class WhoamiJSON(TypedDict):
    principal: Optional[str]
    name: str
    namespace: str
    reads: list[str]
    scopes: list[str]
    request_id: Optional[str]


class EntityJSON(TypedDict):
    id: int
    name: str
    aliases: list[str]


class EntitiesJSON(TypedDict):
    entities: list[EntityJSON]


class ConceptHitJSON(TypedDict):
    ref: str
    score: float
    content: str
    token_estimate: int


class ConceptsJSON(TypedDict):
    hits: list[ConceptHitJSON]


class EntityAddedJSON(EntityJSON):
    linked: int
    namespace: str
    request_id: Optional[str]


class ConceptStoredJSON(TypedDict):
    path: str
    namespace: str
    ref: str
    request_id: Optional[str]


class MaterializedJSON(NewMemoryJSON):
    concept: str


class SupersedePairJSON(TypedDict):
    old: str
    new: str


class SkippedJSON(TypedDict):
    line: int
    reason: str


class RowOutcomeJSON(TypedDict, total=False):
    status: str  # created | superseded | unchanged | similar
    id: str
    supersedes: str
    similar: list[SimilarJSON]


class SessionExtractedJSON(TypedDict):
    session: str
    facts: list[str]  # the facts written, by id (each one's provenance names the session and its turns)
    superseded: list[SupersedePairJSON]  # the model's updates: the old fact's validity closed, history kept
    unchanged: int  # facts the memory already held (the same text, or the model judged them repeated)
    refused: list[str]  # why each refused fact was refused (a turn the session does not have, ...)
    calls: int  # model calls it took
    tokens_in: int
    tokens_out: int


class SessionFailedJSON(TypedDict):
    session: str
    kind: str  # budget | malformed | timeout | unreachable | http-<status> | oversized | ...
    reason: str  # in words; the session's turns are stored all the same (`halomem extract --retry`)


class ExtractionJSON(TypedDict):
    extracted: list[SessionExtractedJSON]
    failed: list[SessionFailedJSON]


class UsageDayJSON(TypedDict):
    namespace: str
    day: str  # UTC, YYYY-MM-DD
    calls: int
    failed: int  # calls that gave no usable answer (failed or malformed)
    tokens_in: int
    tokens_out: int


class UsageJSON(TypedDict):
    usage: list[UsageDayJSON]


class IngestJSON(TypedDict):
    written: int
    namespace: str
    ids: list[str]
    unchanged: list[str]
    superseded: list[SupersedePairJSON]
    request_id: Optional[str]
    skipped: list[SkippedJSON]
    items: list[RowOutcomeJSON]  # one per row written or not, in order (write.bulk)
    extraction: Optional[ExtractionJSON]  # conversations with extract: what the chat model formed (formation)


class DocumentWrittenJSON(TypedDict, total=False):
    path: str  # ROOT/path (and #n for a part of a long document)
    id: str
    status: str  # created | superseded (written); unchanged | similar (not written)
    supersedes: str
    similar: list[SimilarJSON]


class DocumentRetiredJSON(TypedDict):
    path: str
    id: str
    reason: str


class DocumentSkippedJSON(TypedDict):
    path: str
    reason: str


class DocumentCountsJSON(TypedDict):
    written: int
    unchanged: int
    superseded: int
    retired: int
    skipped: int


class DocumentsJSON(TypedDict):  # intake.documents.DocumentsReport builds it
    namespace: str
    request_id: str
    dry_run: bool
    written: list[DocumentWrittenJSON]
    unchanged: list[DocumentWrittenJSON]
    superseded: list[dict[str, Any]]
    retired: list[DocumentRetiredJSON]
    skipped: list[DocumentSkippedJSON]
    counts: DocumentCountsJSON


class ABTestJSON(TypedDict):
    a: str
    b: str
    pct_b: int


# "from": the namespace the routing comes from ("default": none set), a keyword in Python; "origins":
# where each facet (routing, consolidate, ttl, llm_tokens_per_day) comes from; "ttl": a span such as 90d,
# or never; "llm_tokens_per_day": null is the server's default budget
PolicyJSON = TypedDict("PolicyJSON", {"retriever": str, "ab_test": ABTestJSON, "consolidate": str, "ttl": str,
                                      "llm_tokens_per_day": Optional[int], "namespace": str, "from": str,
                                      "origins": dict[str, str]}, total=False)


class ImportJSON(TypedDict):
    memories: int  # versions written (live heads, superseded versions, tombstones)
    unchanged: int  # already here, identical: skipped
    entities: int
    concepts: int
    policies: int


class AuditRowJSON(TypedDict):
    seq: int
    at: str
    actor_ns: str
    action: str
    outcome: str
    fields: dict[str, Any]  # the row's record, as data (what the hash covers)
    detail: str  # the same record as one line for people: never to be parsed
    request_id: str
    prev_hash: str
    hash: str
    principal: Optional[str]


class AuditJSON(TypedDict):
    rows: list[AuditRowJSON]


class SightingJSON(TypedDict):
    seq: int
    at: str
    principal: Optional[str]
    namespace: str
    request_id: str
    transport: str
    memory_id: str
    rank: int
    score: float


class WhoSawJSON(TypedDict):
    memory_id: str
    versions: list[str]
    sightings: list[SightingJSON]


class ReplayedRefJSON(TypedDict):
    rank: int
    tier: str
    ref: str
    score: float


class RerankedJSON(TypedDict):
    ref: str
    was: int
    now: int


class ReplayJSON(TypedDict):
    seq: int
    namespace: str
    at: str
    as_of: str
    identical: bool
    recorded_driver: str
    replayed_driver: str
    recorded_embedder: str
    replayed_embedder: str
    recorded: list[ReplayedRefJSON]
    replayed: list[ReplayedRefJSON]
    missing: list[str]
    added: list[str]
    reranked: list[RerankedJSON]
    reasons: list[str]
    request_id: str


class FeedbackJSON(TypedDict):
    id: int
    request_id: str  # the search the feedback is about
    ref: str
    memory_id: Optional[str]
    namespace: str
    verdict: str
    note: Optional[str]
    at: str


class AuditStatusJSON(TypedDict):
    verified: bool


class NamespaceCountJSON(TypedDict):
    namespace: str
    memories: int  # live memories (current, not erased)


class NamespacesJSON(TypedDict):
    root: str
    namespaces: list[NamespaceCountJSON]


class PolicyReportJSON(TypedDict):  # halomem.policy.report builds it
    namespace: str
    days: float
    policy: dict[str, Any]
    arms: list[dict[str, Any]]
    shadows: list[dict[str, Any]]


class TokenJSON(TypedDict):
    id: str
    name: str
    namespace: str
    scopes: list[str]
    created_at: str
    expires_at: Optional[str]
    revoked_at: Optional[str]
    created_by: Optional[str]
    status: str


class TokensJSON(TypedDict):
    tokens: list[TokenJSON]


class IssuedTokenJSON(TokenJSON):
    token: str


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(frozen=True)
class Hit:
    rank: int
    score: float
    tier: str
    ref: str
    id: str | None
    namespace: str | None
    source: str | None
    content: str
    token_estimate: int
    valid_from: str | None = None  # ISO time the fact became valid (a concept: last updated)
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> HitJSON:
        turn = self.provenance if self.provenance.get("format") == "chat" else {}
        return {**asdict(self), "score": round(self.score, SCORE_DIGITS),  # type: ignore[typeddict-item]
                "speaker": turn.get("speaker"), "session": turn.get("session"), "said_at": turn.get("time")}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Hit":
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__ if k in data})


@dataclass
class SearchResult:
    query: str
    namespace: str
    driver: str
    requested_driver: str
    request_id: str
    hits: list[Hit] = field(default_factory=list)
    fallback: str | None = None
    dropped: int = 0
    warnings: list[str] = field(default_factory=list)
    elapsed_ms: float = 0.0
    as_of: str | None = None  # the instant searched (ISO 8601 UTC), None for now

    @property
    def tokens(self) -> int:
        return sum(h.token_estimate for h in self.hits)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SearchResult":
        return cls(data["query"], data["namespace"], data["driver"], data["requested_driver"], data["request_id"],
                   [Hit.from_dict(h) for h in data["hits"]], data.get("fallback"), data.get("dropped", 0), [],
                   data.get("elapsed_ms", 0.0), data.get("as_of"))

    def to_dict(self) -> SearchJSON:
        """The JSON shape of a search, the same for `search --json`, the HTTP API and MCP."""
        return {"query": self.query, "namespace": self.namespace, "driver": self.driver,
                "requested_driver": self.requested_driver, "fallback": self.fallback,
                "request_id": self.request_id, "tokens": self.tokens, "dropped": self.dropped,
                "elapsed_ms": round(self.elapsed_ms, 3), "as_of": self.as_of,
                "hits": [h.to_dict() for h in self.hits]}


@dataclass(frozen=True)
class NewMemory:
    id: str
    namespace: str
    source: str | None
    request_id: str | None = None
    status: str = "created"  # created | unchanged | similar (write.consolidate)
    similar: tuple[Any, ...] = ()  # near-copies (write.consolidate.Similar, or their dicts from a server)

    def to_dict(self) -> NewMemoryJSON:
        return {"id": self.id, "namespace": self.namespace, "source": self.source, "request_id": self.request_id,
                "status": self.status, "similar": [s if isinstance(s, dict) else s.to_dict() for s in self.similar]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "NewMemory":
        return cls(data["id"], data["namespace"], data.get("source"), data.get("request_id"),
                   data.get("status", "created"), tuple(data.get("similar") or ()))


@dataclass(frozen=True)
class MemoryRow:
    id: str
    namespace: str
    content: str
    source: str | None
    tier: str
    t_valid_from: datetime
    t_valid_to: datetime | None
    supersedes: str | None
    superseded_by: str | None
    erased_at: datetime | None
    provenance: dict[str, Any]

    def to_dict(self) -> MemoryJSON:
        return {"id": self.id, "namespace": self.namespace, "content": self.content, "source": self.source,
                "tier": self.tier, "t_valid_from": self.t_valid_from.isoformat(), "t_valid_to": iso(self.t_valid_to),
                "supersedes": self.supersedes, "superseded_by": self.superseded_by, "erased_at": iso(self.erased_at),
                "provenance": self.provenance}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MemoryRow":
        times = {k: datetime.fromisoformat(data[k]) if data.get(k) else None
                 for k in ("t_valid_from", "t_valid_to", "erased_at")}
        return cls(**{**data, **times})


@dataclass(frozen=True)
class Page:
    """Newest memories first, and where the next page starts (None: this was the last)."""

    memories: list[MemoryRow]
    next_cursor: str | None = None

    def to_dict(self) -> PageJSON:
        return {"memories": [m.to_dict() for m in self.memories], "next_cursor": self.next_cursor}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Page":
        return cls([MemoryRow.from_dict(m) for m in data["memories"]], data.get("next_cursor"))


@dataclass(frozen=True)
class IngestReport:
    written: int  # new rows (fresh keys, unkeyed lines, and the new heads of superseded keys)
    skipped: list[tuple[int, str]]
    ids: list[str]
    namespace: str = ""
    request_id: str | None = None
    unchanged: list[str] = field(default_factory=list)  # rows already live with that content (their ids)
    superseded: list[tuple[str, str]] = field(default_factory=list)  # (old id, new id) for changed keys
    items: list[Any] = field(default_factory=list)  # one outcome per row (write.bulk.Outcome or its dict)
    extraction: "Extraction | None" = None  # conversations ingested with extract (formation)

    def to_dict(self) -> IngestJSON:
        return {"written": self.written, "namespace": self.namespace, "ids": self.ids, "unchanged": self.unchanged,
                "superseded": [{"old": old, "new": new} for old, new in self.superseded],
                "request_id": self.request_id, "skipped": [{"line": n, "reason": why} for n, why in self.skipped],
                "items": [o if isinstance(o, dict) else o.to_dict() for o in self.items],
                "extraction": self.extraction.to_dict() if self.extraction is not None else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "IngestReport":
        """An ingest's answer (``to_dict``) or a remember_many's (``to_batch_dict``)."""
        extraction = data.get("extraction")
        return cls(data["written"], [(s["line"], s["reason"]) for s in data.get("skipped", [])], data["ids"],
                   data["namespace"], data.get("request_id"), data.get("unchanged", []),
                   [(s["old"], s["new"]) for s in data.get("superseded", [])], data.get("items", []),
                   Extraction.from_dict(extraction) if extraction is not None else None)

    def to_batch_dict(self) -> BatchJSON:
        """The shape of a remember_many answer (REST, MCP, the client)."""
        return {"written": self.written, "ids": self.ids, "namespace": self.namespace, "request_id": self.request_id,
                "items": [o if isinstance(o, dict) else o.to_dict() for o in self.items]}


@dataclass
class SessionExtracted:  # not frozen: extraction tallies a session into it as it goes
    session: str
    facts: list[str] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0
    refused: list[str] = field(default_factory=list)
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    def to_dict(self) -> SessionExtractedJSON:
        return {"session": self.session, "facts": list(self.facts),
                "superseded": [{"old": old, "new": new} for old, new in self.superseded], "unchanged": self.unchanged,
                "refused": list(self.refused), "calls": self.calls, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out}


@dataclass(frozen=True)
class SessionFailed:
    session: str
    kind: str
    reason: str

    def to_dict(self) -> SessionFailedJSON:
        return {"session": self.session, "kind": self.kind, "reason": self.reason}


@dataclass(frozen=True)
class Extraction:
    """What formation did with each session: facts written and superseded, or why it failed (the
    session's turns are stored either way)."""

    extracted: list[SessionExtracted] = field(default_factory=list)
    failed: list[SessionFailed] = field(default_factory=list)

    def to_dict(self) -> ExtractionJSON:
        return {"extracted": [s.to_dict() for s in self.extracted], "failed": [f.to_dict() for f in self.failed]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Extraction":
        return cls([SessionExtracted(s["session"], s["facts"], [(p["old"], p["new"]) for p in s["superseded"]],
                                     s["unchanged"], s["refused"], s["calls"], s["tokens_in"], s["tokens_out"])
                    for s in data.get("extracted", [])],
                   [SessionFailed(f["session"], f["kind"], f["reason"]) for f in data.get("failed", [])])


@dataclass(frozen=True)
class Erased:
    id: str
    namespace: str
    request_id: str | None = None
    versions: tuple[str, ...] = ()  # the versions this request erased (``chain``: every one left)

    def to_dict(self) -> ErasedJSON:
        """The one JSON shape of an erase (CLI, REST, MCP, the client)."""
        return {"erased": self.id, "namespace": self.namespace, "request_id": self.request_id,
                "versions": list(self.versions)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Erased":
        return cls(data["erased"], data["namespace"], data.get("request_id"), tuple(data.get("versions") or ()))


@dataclass(frozen=True)
class EntityAdded:
    id: int
    name: str
    aliases: list[str]
    linked: int  # mentions linked that the caller may read (index.acl.mentionable)
    namespace: str
    request_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "aliases": list(self.aliases), "linked": self.linked,
                "namespace": self.namespace, "request_id": self.request_id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EntityAdded":
        return cls(data["id"], data["name"], list(data["aliases"]), data["linked"], data["namespace"],
                   data.get("request_id"))


@dataclass(frozen=True)
class ConceptStored:
    path: str
    namespace: str
    request_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "namespace": self.namespace, "ref": f"{self.namespace}:{self.path}",
                "request_id": self.request_id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ConceptStored":
        return cls(data["path"], data["namespace"], data.get("request_id"))


@dataclass(frozen=True)
class Sighting:
    """One request that was returned a version of a memory (audit.seen): when, who, how, at which rank."""

    seq: int
    at: str
    principal: str | None
    namespace: str
    request_id: str
    transport: str
    memory_id: str
    rank: int
    score: float


@dataclass(frozen=True)
class WhoSaw:
    """`audit who-saw`: every request that was returned a version of ``memory_id``'s chain."""

    memory_id: str
    versions: list[str]
    sightings: list[Sighting]

    def to_dict(self) -> WhoSawJSON:
        return {"memory_id": self.memory_id, "versions": list(self.versions),
                "sightings": [asdict(s) for s in self.sightings]}  # type: ignore[typeddict-item]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "WhoSaw":
        return cls(data["memory_id"], list(data["versions"]), [Sighting(**s) for s in data["sightings"]])


@dataclass(frozen=True)
class ReplayedRef:
    rank: int
    tier: str
    ref: str
    score: float


@dataclass(frozen=True)
class Replay:
    """`audit replay SEQ`: a recorded search re-run as of its instant, beside what it returned then."""

    seq: int
    namespace: str
    at: str  # when the search ran
    as_of: str  # the instant replayed: the search's own as-of, else when it ran
    recorded_driver: str
    replayed_driver: str
    recorded_embedder: str
    replayed_embedder: str
    recorded: list[ReplayedRef]
    replayed: list[ReplayedRef]
    reasons: list[str]  # why they differ, where known
    request_id: str = ""

    @property
    def missing(self) -> list[str]:
        now = {r.ref for r in self.replayed}
        return [r.ref for r in self.recorded if r.ref not in now]

    @property
    def added(self) -> list[str]:
        then = {r.ref for r in self.recorded}
        return [r.ref for r in self.replayed if r.ref not in then]

    @property
    def reranked(self) -> list[tuple[str, int, int]]:
        """(ref, rank then, rank now) of refs in both whose rank changed."""
        now = {r.ref: r.rank for r in self.replayed}
        return [(r.ref, r.rank, now[r.ref]) for r in self.recorded if r.ref in now and now[r.ref] != r.rank]

    @property
    def identical(self) -> bool:
        """The same refs in the same order (scores are recorded rounded: their last digit may move)."""
        return [(r.tier, r.ref) for r in self.recorded] == [(r.tier, r.ref) for r in self.replayed]

    def to_dict(self) -> ReplayJSON:
        return {"seq": self.seq, "namespace": self.namespace, "at": self.at, "as_of": self.as_of,
                "identical": self.identical, "recorded_driver": self.recorded_driver,
                "replayed_driver": self.replayed_driver, "recorded_embedder": self.recorded_embedder,
                "replayed_embedder": self.replayed_embedder,
                "recorded": [asdict(r) for r in self.recorded],  # type: ignore[misc]
                "replayed": [asdict(r) for r in self.replayed],  # type: ignore[misc]
                "missing": self.missing, "added": self.added,
                "reranked": [{"ref": ref, "was": was, "now": now} for ref, was, now in self.reranked],
                "reasons": list(self.reasons), "request_id": self.request_id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Replay":
        return cls(data["seq"], data["namespace"], data["at"], data["as_of"], data["recorded_driver"],
                   data["replayed_driver"], data["recorded_embedder"], data["replayed_embedder"],
                   [ReplayedRef(**r) for r in data["recorded"]], [ReplayedRef(**r) for r in data["replayed"]],
                   list(data["reasons"]), data.get("request_id", ""))


@dataclass(frozen=True)
class Feedback:
    """A verdict on one ref a search returned (halomem.feedback)."""

    id: int
    request_id: str
    ref: str
    memory_id: str | None
    namespace: str
    verdict: str
    note: str | None
    at: str

    def to_dict(self) -> FeedbackJSON:
        return asdict(self)  # type: ignore[return-value]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Feedback":
        return cls(**{k: data[k] for k in ("id", "request_id", "ref", "memory_id", "namespace", "verdict", "note",
                                           "at")})


def hit_metadata(result: SearchResult, hit: Hit) -> dict[str, Any]:
    """What a framework adapter (LangChain, LlamaIndex) attaches to a hit's text: its calibrated
    score, where it lives and comes from, and the search's request id (what feedback names)."""
    return {"score": hit.score, "id": hit.id, "ref": hit.ref, "namespace": hit.namespace, "source": hit.source,
            "valid_from": hit.valid_from, "provenance": hit.provenance, "request_id": result.request_id}
