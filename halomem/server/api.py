"""The HTTP JSON API (`/v1`): routes translate HTTP to halomem.ops and back, nothing more.

The caller is whoever the bearer token names. Bodies are closed models: a field the API does not
define (a ``namespace`` above all: the token decides it) is refused with nothing written, and so
is a ``namespace``/``ns`` query parameter. Admin routes name their *target* namespace in the path.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Literal, Optional

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.security import HTTPBearer
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from ..auth.principal import parse_duration
from ..errors import AuthenticationError, InvalidInputError
from ..types import NAMESPACE_MAX_LENGTH
from ..limits import (MAX_EXTRACT_SESSIONS, MAX_LLM_TOKENS_PER_DAY, MAX_ACTION_CHARS, MAX_AS_OF_CHARS, MAX_AUDIT_ROWS, MAX_BATCH, MAX_BUDGET, MAX_CURSOR_CHARS, MAX_DAYS,
                      MAX_ID_CHARS, MAX_K, MAX_NOTE_CHARS, MAX_PAGE, MAX_REASON_CHARS, MAX_ROOT_NAME_CHARS, namespace)
from ..ops import Operations
from ..pipeline import Pipeline
from ..results import (AuditJSON, BatchJSON, ImportJSON, ChainJSON, ConceptsJSON, ConceptStoredJSON, EntitiesJSON, EntityAddedJSON,
                       AuditStatusJSON, FeedbackJSON, NamespacesJSON, PolicyReportJSON,
                       DocumentsJSON, ErasedJSON, ExtractionJSON, IngestJSON, UsageJSON, IssuedTokenJSON, MaterializedJSON, MemoryJSON, NewMemoryJSON, PageJSON,
                       PolicyJSON, ReplayJSON, SearchJSON, SupersededJSON, TokenJSON, TokensJSON, WhoamiJSON,
                       WhoSawJSON)
from .edge import current
from .openapi import ALL_ROUTES, problems, shape

CALLER_FIELDS = ("namespace", "ns", "caller", "caller_namespace")
MAX_UPLOAD_FILES = 1000  # documents one upload may carry (within the server's body limit)
# reads whose cost grows with the audit trail: admitted, but yielding to callers in flight (admission)
COSTLY_READS = frozenset({"GET /v1/audit", "GET /v1/audit/status", "GET /v1/audit/who-saw",
                          "POST /v1/audit/replay/{seq}", "GET /v1/policy/report", "GET /v1/namespaces"})
MAX_LABEL = 255


def neutralized(label: str) -> str:
    """A caller's file name as it may appear in a message: printable, valid text."""
    return "".join(c if c.isprintable() else "?" for c in label).encode("utf-8", "replace").decode("utf-8")


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryIn(Closed):
    content: str = Field(description="The memory text.")
    source: Optional[str] = Field(None, description="Where it came from (a document, a thread).")
    provenance: Optional[dict[str, Any]] = None


class SearchIn(Closed):
    query: str
    k: int = Field(10, ge=1, le=MAX_K, strict=True)
    token_budget: int = Field(2000, ge=1, le=MAX_BUDGET, strict=True)
    sources: Optional[list[str]] = None
    driver: Optional[str] = None
    as_of: Optional[str] = Field(None, max_length=MAX_AS_OF_CHARS, description=(
        "Search the store as it stood then: ISO 8601 (naive is UTC) or a span back such as 2h or 3d."
        " Concepts keep no history: an as-of search returns memories only."))


class BatchIn(Closed):
    memories: list[MemoryIn] = Field(min_length=1, max_length=MAX_BATCH)


class ExtractIn(Closed):
    retry: bool = Field(False, description="The sessions whose last extraction failed.")
    sessions: list[str] = Field([], max_length=MAX_EXTRACT_SESSIONS, description="Stored sessions by name: "
                                "extracted again.")


class EraseIn(Closed):
    reason: str = Field("", max_length=MAX_REASON_CHARS)
    chain: bool = Field(False, description="Erase every version of the memory's supersedence chain (its earlier "
                        "values stay readable in history and as-of otherwise).")


class FeedbackIn(Closed):
    request_id: str = Field(max_length=MAX_ID_CHARS, description="The request_id of the search that returned the hit.")
    ref: str = Field(max_length=MAX_ID_CHARS, description="The hit's id (or its ref, for a concept).")
    verdict: Literal["helpful", "not-helpful", "wrong"]
    note: Optional[str] = Field(None, max_length=MAX_NOTE_CHARS, description="Why, in a sentence (user data: "
                                "cleared when the memory is erased).")


class EntityIn(Closed):
    name: str
    aliases: list[str] = []


class ConceptIn(Closed):
    content: str


class ConceptRef(Closed):
    path: str


class ConceptSearchIn(Closed):
    query: str
    k: int = Field(10, ge=1, le=MAX_K, strict=True)


class PolicyIn(Closed):
    retriever: Optional[str] = None
    allow_unmounted: bool = Field(False, description="Accept a driver not mounted on this server (to be "
                                                     "installed later); searches serve baseline until it is.")
    ab_test: Optional[dict[str, Any]] = None
    consolidate: Optional[Literal["off", "report", "skip-similar"]] = Field(None, description=(
        "What a write does about a near-copy of a live memory: report it beside the new id (the default), "
        "write nothing and name the copy (skip-similar), or neither (off)."))
    ttl: Optional[str] = Field(None, max_length=MAX_AS_OF_CHARS, description=(
        "How long a memory stays current: a span such as 90d, 12h or 2w (older ones leave present searches and "
        "maintenance closes them, history kept), or never."))
    llm_tokens_per_day: Optional[int] = Field(None, ge=0, le=MAX_LLM_TOKENS_PER_DAY, strict=True, description=(
        "The chat model tokens extraction may spend for the namespace in a UTC day (0: none)."))


class TokenIn(Closed):
    name: str
    scopes: list[str] = ["read"]
    expires: Optional[str] = Field(None, description="A duration such as 30d, 12h or 2w.")


def jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def principal_json(p: Any) -> dict[str, Any]:
    return jsonable(p.public())


def build_router(pipeline: Pipeline) -> APIRouter:
    def operations(request: Request) -> Operations:
        """The caller's operations: the edge (server.edge) authenticated and rate-limited it."""
        named = [k for k in request.query_params if k.lower() in CALLER_FIELDS]
        if named:
            raise InvalidInputError(f"query parameter {named[0]!r} refused: the token decides the caller namespace")
        held = current(request)
        if held is None:
            raise AuthenticationError("missing bearer token (Authorization: Bearer hm_...)")
        return pipeline.operations(held)

    bearer = HTTPBearer(auto_error=False, scheme_name="token", description="hm_<id>_<secret> (halomem token create); "
                        "the token decides the caller's namespace")
    r = APIRouter(prefix="/v1", dependencies=[Depends(bearer)], responses=problems(*ALL_ROUTES))
    Ops = Depends(operations)

    @r.get("/whoami", summary="The principal this token stands for, the namespaces it reads, its scopes",
           responses=shape(WhoamiJSON))
    def whoami(ops: Operations = Ops) -> dict[str, Any]:
        return ops.whoami()

    @r.get("/memories", summary="The newest memories the caller may see, a page at a time", responses=shape(PageJSON))
    def recent(limit: int = Query(20, ge=1, le=MAX_PAGE, description="Memories on this page."),
               cursor: Optional[str] = Query(None, max_length=MAX_CURSOR_CHARS, description="The previous page's next_cursor."),
               source: Optional[list[str]] = Query(None, description="Only these sources (repeatable)."),
               key: Optional[list[str]] = Query(None, description="Only the keyed memories with these keys "
                                                "(repeatable; a key is given at ingest)."),
               within: Optional[str] = Query(None, max_length=NAMESPACE_MAX_LENGTH, description=(
                   "Only the memories of this namespace: the caller's own or an ancestor's (what it reads).")),
               ops: Operations = Ops) -> dict[str, Any]:
        return ops.recent(limit, cursor, source, key, within).to_dict()

    @r.get("/memories/{memory_id}", summary="One memory the caller may see, with validity times and provenance",
           responses=shape(MemoryJSON))
    def get_memory(memory_id: str, ops: Operations = Ops) -> dict[str, Any]:
        return ops.get(memory_id).to_dict()

    @r.post("/memories:batch", status_code=201, summary="Remember several memories at once (all or nothing)",
            responses={**shape(BatchJSON, 201), **problems(409)})
    def remember_many(body: BatchIn, ops: Operations = Ops) -> dict[str, Any]:
        report = ops.remember_many([m.model_dump(exclude_none=True) for m in body.memories])
        return report.to_batch_dict()

    @r.post("/memories", status_code=201, summary="Remember one memory in the caller's namespace (consolidated: "
            "the same text already live answers its id, 200, status unchanged)",
            responses={**shape(NewMemoryJSON, 201), **shape(NewMemoryJSON, 200), **problems(409)})
    def remember(body: MemoryIn, response: Response, ops: Operations = Ops) -> dict[str, Any]:
        made = ops.remember(body.content, source=body.source, provenance=body.provenance)
        if made.status != "created":
            response.status_code = 200  # nothing was created: the existing memory answers
        return made.to_dict()

    @r.post("/memories:ingest", status_code=201, summary="Bulk ingest a JSONL body (all or nothing)",
            openapi_extra={"requestBody": {"content": {"application/x-ndjson": {"schema": {"type": "string"}}}}},
            responses={**shape(IngestJSON, 201), **problems(409)})
    async def ingest(request: Request, skip_bad: bool = False, format: str = "jsonl",  # noqa: A002
                     name: Optional[str] = Query(None, max_length=MAX_LABEL, description=(
                         "The file's name, for the messages naming bad lines (default body.<format>).")),
                     extract: bool = Query(False, description="Conversations (format chat): then the server's chat "
                                           "model extracts facts from each session with new turns (extraction)."),
                     ops: Operations = Ops) -> dict[str, Any]:
        from starlette.concurrency import run_in_threadpool

        if format not in ("jsonl", "csv", "chat"):
            raise InvalidInputError("format must be jsonl, csv or chat")
        raw = await request.body()
        label = neutralized(name) if name else f"body.{format}"
        report = await run_in_threadpool(ops.ingest_bytes, raw, fmt=format, skip_bad=skip_bad, label=label,
                                         extract=extract)
        return report.to_dict()

    @r.post("/memories:extract", summary="Have the chat model extract facts from stored conversations again: the "
            "sessions whose extraction failed, or named ones", responses={**shape(ExtractionJSON), **problems(409)})
    def extract(body: ExtractIn, ops: Operations = Ops) -> dict[str, Any]:
        return ops.extract(retry=body.retry, sessions=body.sessions).to_dict()

    @r.get("/usage", summary="The chat model's calls and tokens per namespace (the caller's and below) and day "
           "(admin)", responses=shape(UsageJSON))
    def usage(days: float = Query(7.0, gt=0, le=MAX_DAYS, description="The window, in days."),
              ops: Operations = Ops) -> dict[str, Any]:
        return {"usage": ops.usage(days)}

    @r.post("/documents", status_code=201, summary="Ingest documents (multipart upload; each part's file name is "
            "its path under the root): one memory per file, re-run safely",
            openapi_extra={"requestBody": {"content": {"multipart/form-data": {"schema": {
                "type": "object", "properties": {"files": {"type": "array", "items": {
                    "type": "string", "format": "binary"}}}}}}}},
            responses={**shape(DocumentsJSON, 201), **problems(409)})
    async def documents(request: Request,
                        root: str = Query(..., max_length=MAX_ROOT_NAME_CHARS, description="The root's name: keys are ROOT/path."),
                        prune: bool = Query(False, description="The upload is the whole folder: retire the memories "
                                            "of its files that are not in it."),
                        strict: bool = Query(False, description="Refuse the whole upload if a file cannot be read."),
                        dry_run: bool = Query(False, description="Say what would happen; write nothing."),
                        format: Optional[str] = Query(None, description="Read every file as this format "  # noqa: A002
                                                      "(markdown, text, rst, html, pdf)."),
                        ops: Operations = Ops) -> dict[str, Any]:
        from starlette.concurrency import run_in_threadpool

        from ..intake.files import Root, SourceFile, check_relative, check_root_name
        from ..intake.formats import FORMATS

        if format is not None and format not in set(FORMATS.values()):
            raise InvalidInputError(f"format must be one of {', '.join(sorted(set(FORMATS.values())))}")
        name = check_root_name(root)
        try:
            form = await request.form(max_files=MAX_UPLOAD_FILES, max_fields=8)
        except Exception as exc:  # noqa: BLE001 - a malformed multipart body is the caller's
            raise InvalidInputError(f"not a multipart/form-data body of files ({type(exc).__name__})") from None
        uploads = [f for f in form.getlist("files") if hasattr(f, "read")]
        if not uploads:
            raise InvalidInputError("no files: send each document as a 'files' part, its name its path")
        files = [SourceFile(name, check_relative(u.filename or ""), await u.read()) for u in uploads]
        report = await run_in_threadpool(ops.ingest_documents, [Root(name, prune)], files, fmt=format, prune=prune,
                                         strict=strict, dry_run=dry_run)
        return report.to_dict()

    @r.post("/memories/{memory_id}/supersede", status_code=201, summary="Replace a chain's head",
            responses={**shape(SupersededJSON, 201), **problems(409)})
    def supersede(memory_id: str, body: MemoryIn, ops: Operations = Ops) -> dict[str, Any]:
        made = ops.supersede(memory_id, body.content, source=body.source, provenance=body.provenance)
        return {**made.to_dict(), "supersedes": memory_id}

    @r.post("/memories/{memory_id}/erase", summary="Erase a memory's content for good (tombstone kept)",
            responses={**shape(ErasedJSON), **problems(409)})
    def erase(memory_id: str, body: Optional[EraseIn] = None, ops: Operations = Ops) -> dict[str, Any]:
        return ops.erase(memory_id, reason=body.reason if body else "",  # a reason is optional, as on the CLI
                         chain=body.chain if body else False).to_dict()

    @r.get("/memories/{memory_id}/history", summary="The supersedence chain through a memory",
           responses=shape(ChainJSON))
    def history(memory_id: str, ops: Operations = Ops) -> dict[str, Any]:
        return {"chain": [row.to_dict() for row in ops.history(memory_id)]}

    @r.post("/search", summary="Search what the caller may see", responses={**shape(SearchJSON), **problems(502)})
    def search(body: SearchIn, ops: Operations = Ops) -> Any:
        # already JSON types: a JSONResponse skips FastAPI's recursive encoder (0.3 ms a search here)
        return JSONResponse(ops.search(body.query, k=body.k, token_budget=body.token_budget,
                                       sources=body.sources, driver=body.driver, as_of=body.as_of).to_dict())

    @r.post("/feedback", status_code=201, summary="A verdict on a hit a search returned to the caller",
            responses=shape(FeedbackJSON, 201))
    def feedback(body: FeedbackIn, ops: Operations = Ops) -> dict[str, Any]:
        return ops.feedback(body.request_id, body.ref, body.verdict, body.note).to_dict()

    @r.get("/entities", summary="Entities visible to the caller", responses=shape(EntitiesJSON))
    def entities(ops: Operations = Ops) -> dict[str, Any]:
        return {"entities": ops.entities()}

    @r.post("/entities", status_code=201, summary="Register an entity (or add aliases)",
            responses=shape(EntityAddedJSON, 201))
    def add_entity(body: EntityIn, ops: Operations = Ops) -> dict[str, Any]:
        return ops.add_entity(body.name, body.aliases).to_dict()

    @r.put("/concepts/{path:path}", summary="Create or replace an L3 concept", responses=shape(ConceptStoredJSON))
    def put_concept(path: str, body: ConceptIn, ops: Operations = Ops) -> dict[str, Any]:
        return ops.put_concept(path, body.content).to_dict()

    @r.post("/concepts:materialize", status_code=201, summary="Copy a visible concept into L2 as a memory",
            responses={**shape(MaterializedJSON, 201), **problems(409)})
    def materialize(body: ConceptRef, ops: Operations = Ops) -> dict[str, Any]:
        return {**ops.materialize_concept(body.path).to_dict(), "concept": body.path}

    @r.post("/concepts:search", summary="Search L3 concepts visible to the caller", responses=shape(ConceptsJSON))
    def concept_search(body: ConceptSearchIn, ops: Operations = Ops) -> dict[str, Any]:
        return {"hits": jsonable(ops.concepts(body.query, body.k))}

    @r.get("/policy", summary="The caller's effective policy", responses=shape(PolicyJSON))
    def own_policy(ops: Operations = Ops) -> dict[str, Any]:
        return ops.effective_policy().effective_json(ops.namespace.path)

    @r.get("/policies/{target:path}", summary="A namespace's effective policy (admin)", responses=shape(PolicyJSON))
    def get_policy(target: str, ops: Operations = Ops) -> dict[str, Any]:
        return ops.effective_policy(namespace(target)).effective_json(target)

    @r.put("/policies/{target:path}", summary="Set a namespace's policy (admin)", responses=shape(PolicyJSON))
    def set_policy(target: str, body: PolicyIn, ops: Operations = Ops) -> dict[str, Any]:
        data = body.model_dump(exclude_none=True, exclude={"allow_unmounted"})
        ops.set_policy(namespace(target), data, allow_unmounted=body.allow_unmounted)
        return ops.effective_policy(namespace(target)).effective_json(target)

    @r.delete("/policies/{target:path}", summary="Clear a namespace's own policy (admin)")
    def clear_policy(target: str, ops: Operations = Ops) -> dict[str, Any]:
        return {"namespace": target, "cleared": ops.clear_policy(namespace(target))}

    @r.get("/audit", summary="The newest audit rows of the caller's namespace and below (admin)",
           responses=shape(AuditJSON))
    def audit_tail(n: int = Query(20, description=f"Rows on this page (1-{MAX_AUDIT_ROWS})."),
                   action: Optional[str] = Query(None, max_length=MAX_ACTION_CHARS, description="Only this action."),
                   before: Optional[int] = Query(None, ge=1, le=2**63 - 1, description=(
                       "Only rows older than this seq: the previous page's first seq, to page back.")),
                   within: Optional[str] = Query(None, max_length=NAMESPACE_MAX_LENGTH, description=(
                       "Only rows acted in this namespace of your subtree, and below.")),
                   ops: Operations = Ops) -> dict[str, Any]:
        return {"rows": [row.to_dict() for row in ops.audit_tail(n, action, before, within)]}

    @r.get("/audit/who-saw", summary="Requests made in the caller's namespace and below that were returned a"
           " version of a memory (admin)", responses=shape(WhoSawJSON))
    def who_saw(memory_id: str = Query(..., max_length=MAX_ID_CHARS, description="The memory asked about."),
                ops: Operations = Ops) -> dict[str, Any]:
        return ops.who_saw(memory_id).to_dict()

    @r.post("/audit/replay/{seq}", summary="Re-run a search made in the caller's namespace or below as of its"
            " instant, beside what it returned then (admin)", responses={**shape(ReplayJSON), **problems(502)})
    def replay(seq: int = Path(..., ge=1, le=2**63 - 1, description="The search's audit seq."),
               ops: Operations = Ops) -> dict[str, Any]:
        return ops.replay(seq).to_dict()

    @r.get("/audit/status", summary="Whether the hash-chained audit trail verifies (admin)",
           responses=shape(AuditStatusJSON))
    def audit_status(ops: Operations = Ops) -> dict[str, Any]:
        return ops.audit_status()

    @r.get("/namespaces", summary="The caller's namespace and below with live memory counts (admin)",
           responses=shape(NamespacesJSON))
    def namespaces(ops: Operations = Ops) -> dict[str, Any]:
        return ops.namespaces()

    @r.get("/policy/report", summary="Each arm's record over a window of searches made here and below (admin)",
           responses=shape(PolicyReportJSON))
    def policy_report(days: float = Query(7.0, gt=0, le=MAX_DAYS, description="The window, in days."),
                      ops: Operations = Ops) -> dict[str, Any]:
        return ops.policy_report(days)

    @r.get("/export", summary="The caller's namespace as an export: JSON lines of its memories (every version),"
           " entities, concepts and policy (admin)",
           responses={200: {"description": "JSON lines (halomem export's format)",
                            "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}})
    def export(as_of: Optional[str] = Query(None, max_length=MAX_AS_OF_CHARS, description=(
                   "The memories valid at that instant (ISO 8601 or a span back such as 3d).")),
               ops: Operations = Ops) -> Any:
        return Response(ops.export_namespace(as_of), media_type="application/x-ndjson")

    @r.post("/import", status_code=201, summary="Load an export of the caller's own namespace, all or nothing "
            "(admin; a second import writes nothing)",
            openapi_extra={"requestBody": {"content": {"application/x-ndjson": {"schema": {"type": "string"}}}}},
            responses={**shape(ImportJSON, 201), **problems(409)})
    async def import_(request: Request, ops: Operations = Ops) -> dict[str, Any]:
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(ops.import_namespace, await request.body())

    @r.get("/tokens", summary="Tokens of the caller's namespace and below (admin; never secrets)",
           responses=shape(TokensJSON))
    def list_tokens(ops: Operations = Ops) -> dict[str, Any]:
        return {"tokens": [principal_json(p) for p in ops.list_tokens()]}

    @r.post("/tokens/{target:path}", status_code=201, summary="Create a token for a namespace (admin)",
            responses=shape(IssuedTokenJSON, 201))
    def create_token(target: str, body: TokenIn, ops: Operations = Ops) -> dict[str, Any]:
        expires_in = parse_duration(body.expires) if body.expires else None
        issued = ops.create_token(namespace(target), body.name, body.scopes, expires_in)
        return {**principal_json(issued.principal), "token": issued.token}

    @r.delete("/tokens/{principal_id}", summary="Revoke a token (admin)", responses=shape(TokenJSON))
    def revoke_token(principal_id: str, ops: Operations = Ops) -> dict[str, Any]:
        return principal_json(ops.revoke_token(principal_id))

    return r

