"""What operations return, shared by the kernel, the HTTP API, the client and the CLI.

Standard library only: the remote client and the CLI's remote mode import these without the
database stack.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any


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

    @property
    def tokens(self) -> int:
        return sum(h.token_estimate for h in self.hits)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of a search, the same for `search --json`, the HTTP API and MCP."""
        return {"query": self.query, "namespace": self.namespace, "driver": self.driver,
                "requested_driver": self.requested_driver, "fallback": self.fallback,
                "request_id": self.request_id, "tokens": self.tokens, "dropped": self.dropped,
                "elapsed_ms": round(self.elapsed_ms, 3), "hits": [asdict(h) for h in self.hits]}


@dataclass(frozen=True)
class NewMemory:
    id: str
    namespace: str
    source: str | None
    request_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "namespace": self.namespace, "source": self.source, "request_id": self.request_id}


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


@dataclass(frozen=True)
class IngestReport:
    written: int  # new rows (fresh keys, unkeyed lines, and the new heads of superseded keys)
    skipped: list[tuple[int, str]]
    ids: list[str]
    namespace: str = ""
    request_id: str | None = None
    unchanged: list[str] = field(default_factory=list)  # keyed rows already live with that content
    superseded: list[tuple[str, str]] = field(default_factory=list)  # (old id, new id) for changed keys

    def to_dict(self) -> dict[str, Any]:
        return {"written": self.written, "namespace": self.namespace, "ids": self.ids, "unchanged": self.unchanged,
                "superseded": [{"old": old, "new": new} for old, new in self.superseded],
                "request_id": self.request_id, "skipped": [{"line": n, "reason": why} for n, why in self.skipped]}


@dataclass(frozen=True)
class Erased:
    id: str
    namespace: str
    request_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The one JSON shape of an erase (CLI, REST, MCP, the client)."""
        return {"erased": self.id, "namespace": self.namespace, "request_id": self.request_id}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Erased":
        return cls(data["erased"], data["namespace"], data.get("request_id"))


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
