"""The operations, as data: each one is a function from its arguments to a ``Call`` (the request to
make and how to read its answer). The sync ``Client`` and the ``AsyncClient`` perform the same calls,
so an operation is written once for both; ``OPERATIONS`` names them, with their REST routes.

``OPERATIONS`` is also the contract with the server package: ``halomem.ops.Operations`` (in
process) has a method of each name taking the same parameters, and the server's OpenAPI document
has each route and no other (tests/test_client_contract.py holds the three together).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, Sequence
from urllib.parse import quote

from .results import (ConceptStored, EntityAdded, Erased, Extraction, Feedback, IngestReport, MemoryRow, NewMemory, Page, Replay,
                      SearchResult, WhoSaw)

OWN_NAMESPACE = "\x00own"  # a path segment the client fills in with its token's namespace (asked once)


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    json: Any = None
    content: bytes | None = None
    params: Sequence[tuple[str, str]] = ()
    content_type: str | None = None
    read: Callable[[Any], Any] = field(default=lambda data: data)
    text: bool = False  # the answer is text (an export's JSON lines), not one JSON document


def _seg(value: str) -> str:
    return quote(str(value), safe="")


def _target(target: str | None) -> str:
    return OWN_NAMESPACE if target is None else quote(str(target), safe="/")


def _flag(value: bool) -> str:
    return "true" if value else "false"


# --- reads ----------------------------------------------------------------------------------------
def whoami() -> Call:
    """Who the token stands for: principal, name, namespace, the lineage it reads, scopes."""
    return Call("GET", "/v1/whoami")


def search(query: str, *, k: int = 10, token_budget: int = 2000, sources: Sequence[str] | None = None,
           driver: str | None = None, as_of: Any = None) -> Call:
    """What the caller may see, best first (``as_of``: an ISO instant or a datetime: the past)."""
    body: dict[str, Any] = {"query": query, "k": k, "token_budget": token_budget}
    if as_of:
        body["as_of"] = as_of.isoformat() if hasattr(as_of, "isoformat") else as_of
    if sources:
        body["sources"] = list(sources)
    if driver:
        body["driver"] = driver
    return Call("POST", "/v1/search", json=body, read=SearchResult.from_dict)


def get(memory_id: str) -> Call:
    return Call("GET", f"/v1/memories/{_seg(memory_id)}", read=MemoryRow.from_dict)


def recent(limit: int = 20, cursor: str | None = None, sources: Sequence[str] | None = None,
           keys: Sequence[str] | None = None, within: str | None = None) -> Call:
    """The newest memories the caller may see, a page at a time (``cursor``: the last page's
    next_cursor; ``keys``: only the keyed memories with these keys; ``within``: only one namespace
    it reads, its own or an ancestor's)."""
    params = [("limit", str(limit))] + ([("cursor", cursor)] if cursor else [])
    params += [("source", s) for s in sources or ()] + [("key", k) for k in keys or ()]
    params += [("within", within)] if within else []
    return Call("GET", "/v1/memories", params=params, read=Page.from_dict)


def history(memory_id: str) -> Call:
    return Call("GET", f"/v1/memories/{_seg(memory_id)}/history",
                read=lambda data: [MemoryRow.from_dict(r) for r in data["chain"]])


def entities() -> Call:
    return Call("GET", "/v1/entities", read=lambda data: data["entities"])


def concepts(query: str, k: int = 10) -> Call:
    """L3 concepts the caller may see, best first (ConceptHitJSON dicts)."""
    return Call("POST", "/v1/concepts:search", json={"query": query, "k": k}, read=lambda data: data["hits"])


def effective_policy(target: str | None = None) -> Call:
    """A namespace's effective policy (PolicyJSON); None: the token's own (any scope), else admin."""
    return Call("GET", "/v1/policy" if target is None else f"/v1/policies/{_target(target)}")


def feedback(about: str, ref: str, verdict: str, note: str | None = None) -> Call:
    """A verdict (helpful, not-helpful, wrong) on a hit a search (its request id) returned."""
    body: dict[str, Any] = {"request_id": about, "ref": ref, "verdict": verdict}
    if note:
        body["note"] = note
    return Call("POST", "/v1/feedback", json=body, read=Feedback.from_dict)


# --- writes ---------------------------------------------------------------------------------------
def remember(content: str, *, source: str | None = None, provenance: dict[str, Any] | None = None) -> Call:
    return Call("POST", "/v1/memories", json={"content": content, "source": source, "provenance": provenance},
                read=NewMemory.from_dict)


def remember_many(items: Sequence[dict[str, Any]]) -> Call:
    """Several memories (``{content, source?, provenance?}`` each) in one transaction: all or none."""
    return Call("POST", "/v1/memories:batch", json={"memories": list(items)}, read=IngestReport.from_dict)


def supersede(old_id: str, content: str, *, source: str | None = None,
              provenance: dict[str, Any] | None = None) -> Call:
    return Call("POST", f"/v1/memories/{_seg(old_id)}/supersede",
                json={"content": content, "source": source, "provenance": provenance}, read=NewMemory.from_dict)


def erase(memory_id: str, *, reason: str = "", chain: bool = False) -> Call:
    """Erase a memory's content for good; ``chain``: every version of its supersedence chain."""
    return Call("POST", f"/v1/memories/{_seg(memory_id)}/erase", json={"reason": reason, "chain": chain},
                read=Erased.from_dict)


def ingest_bytes(raw: bytes, *, fmt: str = "jsonl", skip_bad: bool = False, label: str = "body.jsonl",
                 extract: bool = False) -> Call:
    """A JSONL, CSV or chat body, all or nothing (``skip_bad``: write the good lines, list the bad);
    ``extract``: a chat body's facts extracted by the server's chat model too."""
    return Call("POST", "/v1/memories:ingest", content=raw,
                params=[("skip_bad", _flag(skip_bad)), ("format", fmt), ("name", label)]
                + ([("extract", "true")] if extract else []),
                content_type="text/csv" if fmt == "csv" else "application/x-ndjson", read=IngestReport.from_dict)


def extract(*, retry: bool = False, sessions: Sequence[str] = ()) -> Call:
    """Facts from stored conversations again: the sessions whose extraction failed, or named ones."""
    return Call("POST", "/v1/memories:extract", json={"retry": retry, "sessions": list(sessions)},
                read=Extraction.from_dict)


def usage(days: float = 7.0) -> Call:
    """The chat model's calls and tokens per namespace and day (admin; UsageJSON rows)."""
    return Call("GET", "/v1/usage", params=[("days", repr(float(days)))], read=lambda data: data["usage"])


def upload_documents(files: Sequence[tuple[str, bytes]], *, root: str, fmt: str | None = None, prune: bool = False,
                     strict: bool = False, dry_run: bool = False) -> Call:
    """Documents as (path under ``root``, bytes): one memory per file, keyed ROOT/path, re-run safely
    (DocumentsJSON). In process, ``Operations.ingest_documents`` takes folders instead."""
    body, content_type = _multipart(files)
    params = [("root", root), ("prune", _flag(prune)), ("strict", _flag(strict)), ("dry_run", _flag(dry_run))]
    return Call("POST", "/v1/documents", content=body, content_type=content_type,
                params=params + ([("format", fmt)] if fmt else []))


def add_entity(name: str, aliases: Sequence[str] = ()) -> Call:
    return Call("POST", "/v1/entities", json={"name": name, "aliases": list(aliases)}, read=EntityAdded.from_dict)


def put_concept(path: str, content: str) -> Call:
    return Call("PUT", f"/v1/concepts/{quote(path, safe='/')}", json={"content": content}, read=ConceptStored.from_dict)


def materialize_concept(path: str) -> Call:
    return Call("POST", "/v1/concepts:materialize", json={"path": path}, read=NewMemory.from_dict)


# --- administration (admin scope) ----------------------------------------------------------------
def set_policy(target: str | None, policy: dict[str, Any], *, allow_unmounted: bool = False) -> Call:
    """Set a namespace's policy (None: the token's own); answers the effective policy (PolicyJSON)."""
    body = {**policy, "allow_unmounted": True} if allow_unmounted else dict(policy)
    return Call("PUT", f"/v1/policies/{_target(target)}", json=body)


def clear_policy(target: str | None) -> Call:
    return Call("DELETE", f"/v1/policies/{_target(target)}", read=lambda data: data["cleared"])


def policy_report(days: float = 7.0) -> Call:
    return Call("GET", "/v1/policy/report", params=[("days", repr(float(days)))])


def audit_tail(n: int = 20, action: str | None = None, before: int | None = None, within: str | None = None) -> Call:
    """A page of audit rows, oldest first (``within``: a namespace of the admin's subtree, and below)."""
    params = [("n", str(n))] + ([("action", action)] if action else []) + ([("before", str(before))] if before else [])
    params += [("within", within)] if within else []
    return Call("GET", "/v1/audit", params=params, read=lambda data: data["rows"])


def audit_status() -> Call:
    return Call("GET", "/v1/audit/status")


def who_saw(memory_id: str) -> Call:
    return Call("GET", "/v1/audit/who-saw", params=[("memory_id", memory_id)], read=WhoSaw.from_dict)


def replay(seq: int) -> Call:
    return Call("POST", f"/v1/audit/replay/{int(seq)}", read=Replay.from_dict)


def namespaces() -> Call:
    return Call("GET", "/v1/namespaces")


def list_tokens() -> Call:
    """Tokens of the caller's namespace and below (TokenJSON dicts: never a secret)."""
    return Call("GET", "/v1/tokens", read=lambda data: data["tokens"])


def export_namespace(as_of: str | None = None) -> Call:
    """The token's namespace as an export (JSON lines, halomem.portable's format; admin)."""
    return Call("GET", "/v1/export", params=[("as_of", as_of)] if as_of else [], text=True)


def import_namespace(raw: bytes) -> Call:
    """Load an export of the token's own namespace (all or nothing; admin): ImportJSON counts."""
    return Call("POST", "/v1/import", content=raw, content_type="application/x-ndjson")


def create_token(target: str | None, name: str, scopes: Sequence[str] | str,
                 expires_in: timedelta | str | None = None) -> Call:
    """A token for ``target`` (None: the caller's namespace) or below; the answer (IssuedTokenJSON)
    carries its secret, once."""
    body: dict[str, Any] = {"name": name, "scopes": scopes.split(",") if isinstance(scopes, str) else list(scopes)}
    if isinstance(expires_in, timedelta):
        body["expires"] = f"{max(1, math.ceil(expires_in.total_seconds() / 60))}m"
    elif expires_in:
        body["expires"] = expires_in
    return Call("POST", f"/v1/tokens/{_target(target)}", json=body)


def revoke_token(principal_id: str) -> Call:
    return Call("DELETE", f"/v1/tokens/{_seg(principal_id)}")


@dataclass(frozen=True)
class Operation:
    name: str
    method: str
    route: str  # as the server's OpenAPI document writes it
    build: Callable[..., Call]
    in_process: bool = True  # halomem.ops.Operations has it, with the same parameters


def _op(build: Callable[..., Call], method: str, route: str, in_process: bool = True) -> Operation:
    return Operation(build.__name__, method, route, build, in_process)


OPERATIONS: tuple[Operation, ...] = (
    _op(whoami, "GET", "/v1/whoami"),
    _op(search, "POST", "/v1/search"),
    _op(get, "GET", "/v1/memories/{memory_id}"),
    _op(recent, "GET", "/v1/memories"),
    _op(history, "GET", "/v1/memories/{memory_id}/history"),
    _op(entities, "GET", "/v1/entities"),
    _op(concepts, "POST", "/v1/concepts:search"),
    _op(effective_policy, "GET", "/v1/policy"),
    _op(feedback, "POST", "/v1/feedback"),
    _op(remember, "POST", "/v1/memories"),
    _op(remember_many, "POST", "/v1/memories:batch"),
    _op(supersede, "POST", "/v1/memories/{memory_id}/supersede"),
    _op(erase, "POST", "/v1/memories/{memory_id}/erase"),
    _op(ingest_bytes, "POST", "/v1/memories:ingest"),
    _op(extract, "POST", "/v1/memories:extract"),
    _op(usage, "GET", "/v1/usage"),
    _op(upload_documents, "POST", "/v1/documents", in_process=False),
    _op(add_entity, "POST", "/v1/entities"),
    _op(put_concept, "PUT", "/v1/concepts/{path}"),
    _op(materialize_concept, "POST", "/v1/concepts:materialize"),
    _op(set_policy, "PUT", "/v1/policies/{target}"),
    _op(clear_policy, "DELETE", "/v1/policies/{target}"),
    _op(policy_report, "GET", "/v1/policy/report"),
    _op(audit_tail, "GET", "/v1/audit"),
    _op(audit_status, "GET", "/v1/audit/status"),
    _op(who_saw, "GET", "/v1/audit/who-saw"),
    _op(replay, "POST", "/v1/audit/replay/{seq}"),
    _op(namespaces, "GET", "/v1/namespaces"),
    _op(export_namespace, "GET", "/v1/export"),
    _op(import_namespace, "POST", "/v1/import"),
    _op(list_tokens, "GET", "/v1/tokens"),
    _op(create_token, "POST", "/v1/tokens/{target}"),
    _op(revoke_token, "DELETE", "/v1/tokens/{principal_id}"),
)
# effective_policy also answers GET /v1/policies/{target} (its target given)
ALSO_ROUTED = {("GET", "/v1/policies/{target}"): "effective_policy"}


def _multipart(files: Sequence[tuple[str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body of ``files`` as 'files' parts named by their paths."""
    import secrets

    boundary = "halomem-" + secrets.token_hex(16)
    out = bytearray()
    for name, data in files:
        quoted = name.replace("\\", "\\\\").replace('"', '\\"').replace("\r", " ").replace("\n", " ")
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{quoted}\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode("utf-8")
        out += data + b"\r\n"
    out += f"--{boundary}--\r\n".encode("ascii")
    return bytes(out), f"multipart/form-data; boundary={boundary}"
