"""The operations layer: every transport (CLI, REST, MCP) calls these, never the kernel directly.

Each operation authorizes through ``auth.authorize`` (the one decision), names the acting
principal on every audit row it causes, and leaves exactly one audit row per request: the
kernel's own for writes and searches, ``<op> ok`` for other reads, ``<op> refused kind=...`` for a
refused one (ids and kinds only, never content or a token).
"""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from . import audit
from .auth import ADMIN, READ, WRITE, Caller, authorize
from .auth.principal import IssuedToken, Principal
from .auth.store import PrincipalStore
from .db.replicas import Consistency
from .errors import DriverError, HalomemError, InvalidInputError, NotFoundError, PermissionDeniedError
from .kernel import Kernel
from .instants import check_days
from .limits import MAX_AUDIT_ROWS, MAX_EXTRACT_SESSIONS, MAX_REASON_CHARS, MAX_SESSION_CHARS, check_id, check_seq, check_text, namespace
from .policy import Policy
from .results import (ConceptStored, EntityAdded, Erased, Extraction, Feedback, IngestReport, MemoryRow, NewMemory, Page, Replay,
                      SearchResult, WhoSaw)
from .types import Namespace, ScoredRef
from .embed import Embedder
from .write.reembed import Reembedded
from .write.writer import new_request_id

T = TypeVar("T")


class Operations:
    """One caller's operations over a booted kernel."""

    def __init__(self, kernel: Kernel, caller: Caller, request_id: str | None = None,
                 consistency: Consistency | None = None) -> None:
        self.kernel = kernel
        self.caller = caller
        self.request_id = request_id  # a transport's id for this request (HTTP X-Request-Id), else minted
        self.consistency = consistency or Consistency()  # read-your-writes across read replicas (db.replicas)

    @property
    def namespace(self) -> Namespace:
        return self.caller.namespace

    def _run(self, op: str, right: str | None, body: Callable[[Namespace, str], T], target: Namespace | None = None,
             *, kernel_audits: bool = True) -> T:
        """``right`` None: an operation about the caller itself, which any scope may ask."""
        request_id = self.request_id or new_request_id()
        with audit.acting_as(self.caller.principal_id):
            try:
                ns = authorize(self.caller, right, target) if right else self.caller.namespace
                result = body(ns, request_id)
                if right == WRITE and self.kernel.router.enabled:
                    self.consistency.wrote = self.kernel.router.primary_lsn()
                if not kernel_audits:
                    self.kernel.audit_event(ns, op, {"outcome": "ok"}, request_id)
                return result
            except DriverError:
                raise  # the kernel audited the failed search itself
            except HalomemError as exc:  # under the caller's own namespace: never a target's trail
                self.kernel.audit_event(self.caller.namespace, op, {"outcome": "refused", "kind": exc.slug}, request_id)
                raise

    def _own_row(self, ns: Namespace, memory_id: str) -> None:
        """A write to an existing row: the row must be the caller's own. An ancestor's visible row
        is read-only (403); a row the caller cannot see does not exist for it (404)."""
        row = self.kernel.visible_row(ns, check_id(memory_id))
        if row is None:
            raise NotFoundError(f"no memory {memory_id!r} visible from {ns}")
        if row.namespace != ns.path:
            raise PermissionDeniedError(f"memory {memory_id} belongs to {row.namespace}, which is read-only"
                                        f" to {self.caller.label}")

    # --- reads ---------------------------------------------------------------------------------
    def search(self, query: str, *, k: int = 10, token_budget: int = 2000, sources: Sequence[str] | None = None,
               driver: str | None = None, as_of: str | None = None) -> SearchResult:
        return self._run("search", READ, lambda ns, rid: self.kernel.search(
            ns, query, k=k, token_budget=token_budget, sources=sources, driver=driver, request_id=rid,
            after_lsn=self.consistency.after, as_of=as_of))

    def feedback(self, about: str, ref: str, verdict: str, note: str | None = None) -> Feedback:
        """A verdict on a ref that request ``about`` returned to this caller (or, for an admin, to a
        principal it administers); any other ref is "not returned to you", whether or not it exists."""
        return self._run("feedback", None, lambda ns, rid: self.kernel.feedback(self.caller, about, ref, verdict, note,
                                                                                request_id=rid))

    def eval(self, judgements: Sequence[Any] | None, drivers: Sequence[str]) -> Any:
        """Candidate drivers judged on ``judgements`` (None: from the feedback on this namespace's
        searches) at one instant, read-only (halomem.eval); one ``eval ok`` row."""
        from .eval import from_feedback, run_eval

        def run(ns: Namespace, rid: str) -> Any:
            judged = judgements
            if judged is None:
                with self.kernel.engine.connect() as conn:
                    judged = from_feedback(conn, ns.path)
            return run_eval(self.kernel, ns, judged, drivers)

        return self._run("eval", READ, run, kernel_audits=False)

    def namespaces(self) -> dict[str, Any]:
        """The namespaces of the caller's subtree with their live memory counts (admin)."""
        return self._run("namespaces", ADMIN, lambda ns, rid: {"root": ns.path, "namespaces": [
            {"namespace": name, "memories": n} for name, n in sorted(self.kernel.namespace_counts(ns).items())]},
            kernel_audits=False)

    def audit_status(self) -> dict[str, Any]:
        """Whether the hash chain verifies (admin): yes or no, no counts of rows it may not see."""
        return self._run("audit", ADMIN, lambda ns, rid: {"verified": self.kernel.audit_verify(
            incremental=True, pause=audit.log.yield_interpreter).ok}, kernel_audits=False)

    def policy_report(self, days: float = 7.0) -> dict[str, Any]:
        """Each arm's record over the last ``days`` of searches made here and below (policy.report)."""
        from .policy.report import policy_report

        days = check_days(days)

        def run(ns: Namespace, rid: str) -> dict[str, Any]:
            with self.kernel.engine.connect() as conn:
                return policy_report(conn, ns, days)

        return self._run("policy", ADMIN, run, kernel_audits=False)

    def whoami(self) -> dict[str, Any]:
        """Who the token stands for and what it reads: its namespace's lineage, root first."""
        c = self.caller
        return self._run("whoami", None, lambda ns, rid: {
            "principal": c.principal_id, "name": c.name, "namespace": ns.path, "reads": ns.lineage(),
            "scopes": sorted(c.scopes), "request_id": rid}, kernel_audits=False)

    def get(self, memory_id: str) -> MemoryRow:
        return self._run("get", READ, lambda ns, rid: self.kernel.get(ns, check_id(memory_id),
                                                                        after_lsn=self.consistency.after),
                         kernel_audits=False)

    def recent(self, limit: int = 20, cursor: str | None = None, sources: Sequence[str] | None = None,
               keys: Sequence[str] | None = None, within: str | None = None) -> Page:
        """``within``: only the memories of one namespace the caller reads (its own or an ancestor's)."""
        return self._run("recent", READ, lambda ns, rid: self.kernel.recent(
            ns, limit, cursor, sources, keys, within=within, after_lsn=self.consistency.after), kernel_audits=False)

    def history(self, memory_id: str) -> list[MemoryRow]:
        return self._run("history", READ, lambda ns, rid: self.kernel.history(
            ns, check_id(memory_id), after_lsn=self.consistency.after), kernel_audits=False)

    def concepts(self, query: str, k: int = 10) -> list[ScoredRef]:
        return self._run("concepts", READ, lambda ns, rid: self.kernel.concepts(ns, query, k), kernel_audits=False)

    def entities(self) -> list[dict[str, Any]]:
        return self._run("entities", READ, lambda ns, rid: self.kernel.entities(ns), kernel_audits=False)

    def effective_policy(self, target: Namespace | None = None) -> Policy:
        """The caller's own effective policy (read), or a namespace's under it (admin)."""
        right = READ if target is None else ADMIN
        return self._run("policy", right, lambda ns, rid: self.kernel.effective_policy(ns), target,
                         kernel_audits=False)

    # --- writes --------------------------------------------------------------------------------
    def remember(self, content: str, *, source: str | None = None,
                 provenance: dict[str, Any] | None = None) -> NewMemory:
        return self._run("remember", WRITE, lambda ns, rid: self.kernel.remember(
            ns, content, source=source, provenance=provenance, request_id=rid))

    def supersede(self, old_id: str, content: str, *, source: str | None = None,
                  provenance: dict[str, Any] | None = None) -> NewMemory:
        def body(ns: Namespace, rid: str) -> NewMemory:
            self._own_row(ns, old_id)
            return self.kernel.supersede(ns, old_id, content, source=source, provenance=provenance, request_id=rid)
        return self._run("supersede", WRITE, body)

    def erase(self, memory_id: str, *, reason: str = "", chain: bool = False) -> Erased:
        """Erase a memory; ``chain``: every version of its supersedence chain (in the caller's namespace)."""
        def body(ns: Namespace, rid: str) -> Erased:
            self._own_row(ns, memory_id)
            done = self.kernel.erase(ns, memory_id, reason=check_text(reason, "reason", MAX_REASON_CHARS,
                                                                      allow_empty=True), chain=chain, request_id=rid)
            return Erased(memory_id, ns.path, rid, tuple(done))
        return self._run("erase", WRITE, body)

    def remember_many(self, items: Sequence[dict[str, Any]]) -> IngestReport:
        return self._run("remember", WRITE, lambda ns, rid: self.kernel.remember_many(ns, items, request_id=rid))

    def ingest_bytes(self, raw: bytes, *, fmt: str = "jsonl", skip_bad: bool = False,
                     label: str = "body.jsonl", extract: bool = False, **progress: Any) -> IngestReport:
        """Records (jsonl, csv) or conversations (chat) already in memory (a body, stdin); ``extract``:
        the chat model's facts from the conversations too (formation)."""
        return self._run("ingest", WRITE, lambda ns, rid: self.kernel.ingest_bytes(
            ns, raw, fmt=fmt, skip_bad=skip_bad, label=label, request_id=rid, extract=extract, **progress))

    def extract(self, *, retry: bool = False, sessions: Sequence[str] = ()) -> Extraction:
        """Facts from stored conversations: sessions whose extraction failed (``retry``), and those named."""
        if isinstance(sessions, (str, bytes)) or len(sessions) > MAX_EXTRACT_SESSIONS:
            raise InvalidInputError(f"sessions: a list of at most {MAX_EXTRACT_SESSIONS} names")
        names = [check_text(s, "session", MAX_SESSION_CHARS) for s in sessions]
        if not retry and not names:
            raise InvalidInputError("extract what: retry (the sessions whose extraction failed) or sessions by name")
        return self._run("extract", WRITE, lambda ns, rid: self.kernel.extract(ns, retry=retry, sessions=names,
                                                                                request_id=rid))

    def usage(self, days: float = 7.0) -> list[dict[str, Any]]:
        """Model calls and tokens per namespace and day, over the caller's subtree (an admin's)."""
        check_days(days)
        return self._run("usage", ADMIN, lambda ns, rid: self.kernel.model_usage(ns, days), kernel_audits=False)

    def ingest_file(self, path: Path, *, fmt: str | None = None, skip_bad: bool = False,
                    progress: Callable[[int], None] | None = None, on_parsed: Callable[[int], None] | None = None,
                    on_write: Callable[[], None] | None = None) -> IngestReport:
        return self._run("ingest", WRITE, lambda ns, rid: self.kernel.ingest(
            ns, path, fmt=fmt, skip_bad=skip_bad, progress=progress, on_parsed=on_parsed, request_id=rid,
            on_write=on_write))

    def ingest_documents(self, roots: Sequence[Any], files: Sequence[Any], *, fmt: str | None = None,
                         prune: bool = False, strict: bool = False, dry_run: bool = False, **progress: Any) -> Any:
        """Documents into the caller's namespace (intake.documents), each batch audited by the write
        path, each retirement by its own row; returns the DocumentsReport."""
        return self._run("ingest", WRITE, lambda ns, rid: self.kernel.ingest_documents(
            ns, roots, files, fmt=fmt, prune=prune, strict=strict, dry_run=dry_run, request_id=rid, **progress))

    def add_entity(self, name: str, aliases: Sequence[str] = ()) -> EntityAdded:
        def body(ns: Namespace, rid: str) -> EntityAdded:
            entity_id, linked = self.kernel.add_entity(ns, name, aliases, request_id=rid)
            return EntityAdded(entity_id, name, list(aliases), linked, ns.path, rid)
        return self._run("entity", WRITE, body)

    def put_concept(self, path: str, content: str) -> ConceptStored:
        def body(ns: Namespace, rid: str) -> ConceptStored:
            self.kernel.put_concept(ns, path, content, request_id=rid)
            return ConceptStored(path, ns.path, rid)
        return self._run("concept", WRITE, body)

    def materialize_concept(self, path: str) -> NewMemory:
        return self._run("concept", WRITE, lambda ns, rid: self.kernel.materialize_concept(ns, path, request_id=rid))

    # --- administration (the caller's namespace and its descendants) ---------------------------
    def set_policy(self, target: Namespace | None, policy: dict[str, Any], *, allow_unmounted: bool = False) -> Policy:
        return self._run("policy", ADMIN, lambda ns, rid: self.kernel.set_policy(
            ns, policy, request_id=rid, allow_unmounted=allow_unmounted), target)

    def clear_policy(self, target: Namespace | None) -> bool:
        return self._run("policy", ADMIN, lambda ns, rid: self.kernel.clear_policy(ns, request_id=rid), target)

    def audit_tail(self, n: int = 20, action: str | None = None, before: int | None = None,
                   within: str | None = None) -> list[audit.AuditRow]:
        """A page of the audit rows of the caller's namespace and below (``within``: of that
        namespace of its subtree and below), newest ``n`` (at most MAX_AUDIT_ROWS) older than seq
        ``before``: a listing's cost is bounded, the trail paged."""
        def body(ns: Namespace, rid: str) -> list[audit.AuditRow]:
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_AUDIT_ROWS:
                raise InvalidInputError(f"n must be between 1 and {MAX_AUDIT_ROWS} (page back with before=SEQ)")
            if action is not None:
                check_text(action, "action", 40)
            return self.kernel.audit_tail(n, action, subtree=ns, before=check_seq(before) if before else None)
        return self._run("audit", ADMIN, body, namespace(within) if within else None, kernel_audits=False)

    def who_saw(self, memory_id: str) -> WhoSaw:
        """Requests made in the caller's namespace and below that were returned a version of the
        memory; the same empty answer for a memory that does not exist and one never returned here."""
        return self._run("audit", ADMIN, lambda ns, rid: self.kernel.who_saw(check_id(memory_id), subtree=ns),
                         kernel_audits=False)

    def replay(self, seq: int) -> Replay:
        """A search made in the caller's namespace or below, re-run as of its instant (audit.replay)."""
        return self._run("audit", ADMIN, lambda ns, rid: self.kernel.replay(check_seq(seq), subtree=ns,
                                                                             request_id=rid))

    def export_namespace(self, as_of: str | None = None) -> str:
        """The caller's namespace as an export (JSONL: halomem.portable), what its admin may read of it."""
        def body(ns: Namespace, rid: str) -> str:
            return "".join(self.kernel.export_lines(ns, as_of=as_of))
        return self._run("export", ADMIN, body, kernel_audits=False)

    def import_namespace(self, raw: bytes) -> dict[str, int]:
        """Load an export of the caller's own namespace (write.imports; its ``import`` audit row)."""
        return self._run("import", ADMIN, lambda ns, rid: self.kernel.import_lines(
            raw.splitlines(), request_id=rid, only=ns))

    def create_token(self, target: Namespace | None, name: str, scopes: Sequence[str] | str,
                     expires_in: timedelta | None = None) -> IssuedToken:
        return self._run("token", ADMIN, lambda ns, rid: PrincipalStore(self.kernel.engine).create(
            ns, name, scopes, expires_in=expires_in, request_id=rid, maker=self.caller.principal_id), target)

    def list_tokens(self) -> list[Principal]:
        return self._run("token", ADMIN, lambda ns, rid: PrincipalStore(self.kernel.engine).list(ns),
                         kernel_audits=False)

    def revoke_token(self, principal_id: str) -> Principal:
        return self._run("token", ADMIN, lambda ns, rid: PrincipalStore(self.kernel.engine).revoke(
            check_id(principal_id, "token id"), subtree=ns, request_id=rid))


def for_operator(kernel: Kernel, ns: str | Namespace | None) -> Operations:
    """Local trust: whoever owns the data dir acts as the operator of ``--ns``."""
    return Operations(kernel, Caller.operator(namespace(ns)))


class StoreOperations:
    """The local operator's store-wide commands (local trust over the whole data dir: no token, no
    namespace): tokens of any namespace, purge, namespace indexes, policy export and import, the
    audit trail. Each call is one request with its own id and exactly one audit row under ``-``
    (its ``<op> ok ...`` or ``<op> refused kind=...``), unless the kernel writes the operation's own
    rows (purge; policy import: one per namespace; token revocation: one per token)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def _run(self, op: str, body: Callable[[str], T], record: Callable[[T], dict[str, Any]] | None = None) -> T:
        request_id = new_request_id()
        try:
            result = body(request_id)
        except HalomemError as exc:
            self.kernel.audit_event(audit.STORE_NS, op, {"outcome": "refused", "kind": exc.slug}, request_id)
            raise
        if record is not None:
            self.kernel.audit_event(audit.STORE_NS, op, {"outcome": "ok", **record(result)}, request_id)
        return result

    def list_tokens(self, subtree: str | Namespace | None = None) -> list[Principal]:
        root = namespace(subtree) if subtree is not None else None
        return self._run("token", lambda rid: PrincipalStore(self.kernel.engine).list(root),
                         lambda rows: {"listed": len(rows)})

    def revoke_token(self, principal_id: str) -> Principal:
        return self._run("token", lambda rid: PrincipalStore(self.kernel.engine).revoke(
            check_id(principal_id, "token id"), request_id=rid))

    def own_memories(self, ns: str | Namespace) -> int:
        """Live memories of ``ns`` itself (not inherited, not below): a hint for the local operator
        after a search, read-only like case_twins."""
        return self.kernel.namespace_counts(ns).get(Namespace(str(ns)).path, 0)

    def case_twins(self, ns: str | Namespace) -> list[str]:
        """Read-only hint for the local operator (no audit row: it is part of the search it follows)."""
        return self.kernel.case_twins(ns)

    def purge(self) -> list[str]:
        return self._run("purge", lambda rid: self.kernel.purge(request_id=rid))

    def reembed(self, target: Embedder, **progress: Any) -> Reembedded:
        """The store's vectors remade by ``target`` (its swap writes the audit row)."""
        return self._run("reembed", lambda rid: self.kernel.reembed(target, request_id=rid, **progress))

    def index_namespace(self, ns: str | Namespace) -> bool:
        return self._run("index", lambda rid: self.kernel.index_namespace(ns), lambda made: {"created": made})

    def drop_namespace_index(self, ns: str | Namespace) -> bool:
        return self._run("index", lambda rid: self.kernel.drop_namespace_index(ns), lambda gone: {"dropped": gone})

    def namespace_indexes(self) -> list[str]:
        return self._run("index", lambda rid: self.kernel.namespace_indexes(), lambda names: {"listed": len(names)})

    def policies(self) -> list[Policy]:
        return self._run("policy", lambda rid: self.kernel.policies(), lambda rows: {"exported": len(rows)})

    def import_policies(self, policies: dict[str, Any], *, allow_unmounted: bool = False) -> list[Policy]:
        """All validated, then all written in one transaction, or none."""
        return self._run("policy", lambda rid: self.kernel.set_policies(policies, request_id=rid, replace=True,
                                                                        allow_unmounted=allow_unmounted))

    def audit_tail(self, n: int = 20, action: str | None = None) -> list[audit.AuditRow]:
        return self._run("audit", lambda rid: self.kernel.audit_tail(n, action), lambda rows: {"rows": len(rows)})

    def who_saw(self, memory_id: str) -> WhoSaw:
        return self._run("audit", lambda rid: self.kernel.who_saw(check_id(memory_id)),
                         lambda found: {"asked": "who-saw", "id": found.memory_id,
                                         "sightings": len(found.sightings)})

    def replay(self, seq: int) -> Replay:
        return self._run("audit", lambda rid: self.kernel.replay(check_seq(seq), request_id=rid))

    def prune_queries(self, retention_days: float) -> int:
        retention_days = check_days(retention_days, what="--older-than", allow_zero=True)
        return self._run("audit", lambda rid: self.kernel.prune_queries(retention_days),
                         lambda removed: {"asked": "prune-queries", "removed": removed,
                                           "older_than_days": retention_days})

    def export(self, ns: str | Namespace, write: Callable[[str], Any], *, subtree: bool = False,
               as_of: Any = None) -> int:
        """Write ``ns``'s export line by line (halomem.portable); returns the records written."""
        def body(rid: str) -> int:
            written = 0
            for line in self.kernel.export_lines(namespace(ns), subtree=subtree, as_of=as_of):
                write(line)
                written += 1
            return written - 1  # the header is no record
        return self._run("export", body, lambda n: {"namespace": namespace(ns).path, "subtree": subtree,
                                                    "records": n, "as_of": str(as_of) if as_of else None})

    def import_export(self, lines: Any) -> dict[str, int]:
        """Load an export (its own ``import`` audit row says what was written)."""
        return self._run("import", lambda rid: self.kernel.import_lines(lines, request_id=rid))

    def expire(self) -> dict[str, int]:
        """Close what ttl policies expired (write.retention): a ``retire`` row per batch, and this
        request's own row with the count."""
        return self._run("maintain", lambda rid: self.kernel.expire(request_id=rid),
                         lambda closed: {"expired": sum(closed.values()), "namespaces": len(closed)})

    def audit_verify(self, expected: Sequence[Any] = ()) -> audit.VerifyResult:
        """Verify before the row for this request is written, so the head it records is the chain's."""
        return self._run("audit", lambda rid: self.kernel.audit_verify(expected),
                         lambda result: {"verified": result.ok, "rows": result.rows})


def for_store(kernel: Kernel) -> StoreOperations:
    """Local trust, store-wide: the operator's commands that name no namespace."""
    return StoreOperations(kernel)
