"""A Python client of `halomem serve`, with the kernel's result types and error classes.

Built on httpx2, pydantic's maintained continuation of httpx (same API) and the HTTP client the
official MCP SDK already depends on: one HTTP client in the dependency tree, and unlike httpx 0.28
it does not import its command-line tool (click, pygments, rich) on import.

The CLI makes one or two requests per process, for which a pooled client is all cost: httpx2,
httpcore2, h11 and anyio take ~100 ms to import, a third of a remote `halomem search`. So
``Client.for_cli`` sends a direct plain-HTTP request (no proxy configured) through the standard
library's ``http.client``; anything else (https, a proxy, a library user) goes through httpx2.

    from halomem.client import Client
    with Client("http://127.0.0.1:8080", token) as hm:
        hm.remember("Deploys go through ArgoCD canaries", source="runbook")
        for hit in hm.search("how do we deploy").hits: print(hit.score, hit.content)

Every failure raises the same HalomemError subclass the kernel would (NotFoundError,
ConflictError, PermissionDeniedError, ...), rebuilt from the server's problem+json. Importing
this module does not import the database stack.
"""
from __future__ import annotations

import json as jsonlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence
from urllib.parse import quote, urlencode, urlsplit

from .errors import AuthenticationError, HalomemError, ServiceUnreachableError, error_for_problem
from .results import (ConceptStored, EntityAdded, Erased, Feedback, Hit, IngestReport, MemoryRow, NewMemory, Replay, SearchResult,
                      WhoSaw)

if TYPE_CHECKING:
    import httpx2

    from .policy.model import Policy
    from .types import ScoredRef

DEFAULT_TIMEOUT = 60.0


def _seg(value: str) -> str:
    return quote(value, safe="")


class Reply(NamedTuple):
    status: int
    body: bytes
    consistency: str | None = None  # the server's read-your-writes token (read replicas)


CONSISTENCY = "Halomem-Consistency"


PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


class PooledTransport:
    """httpx2: connection pooling, TLS, proxies from the environment."""

    def __init__(self, url: str, headers: dict[str, str], timeout: float,
                 transport: "httpx2.BaseTransport | None" = None) -> None:
        import httpx2

        self._httpx = httpx2
        # plain http has no certificates to verify: skip loading the CA bundle
        verify = not url.startswith("http://")
        self._http = httpx2.Client(base_url=url, timeout=timeout, transport=transport, verify=verify,
                                   headers=headers)

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        try:
            response = self._http.request(method, path, content=body, headers=headers)
        except self._httpx.TimeoutException:
            raise TimeoutError from None
        except self._httpx.HTTPError as exc:
            raise ConnectionError(type(exc).__name__) from None
        return Reply(response.status_code, response.content, response.headers.get(CONSISTENCY))

    def close(self) -> None:
        self._http.close()


class DirectTransport:
    """Plain HTTP through the standard library (``http.client``), a connection per request (a
    loopback connect is ~0.1 ms, and a write is never re-sent over a connection the server closed)."""

    def __init__(self, url: str, headers: dict[str, str], timeout: float) -> None:
        import http.client

        self._http = http.client
        parts = urlsplit(url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._headers = headers
        self._timeout = timeout

    @staticmethod
    def usable(url: str) -> bool:
        """Plain http and no proxy configured: a direct connection is what httpx2 would make too."""
        return url.startswith("http://") and not any(
            os.environ.get(name) or os.environ.get(name.upper()) for name in PROXY_VARIABLES)

    def send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        conn = self._http.HTTPConnection(self._host, self._port, timeout=self._timeout)
        try:
            conn.request(method, self._prefix + path, body=body, headers={**self._headers, **headers})
            response = conn.getresponse()
            return Reply(response.status, response.read(), response.getheader(CONSISTENCY))
        except TimeoutError:
            raise
        except (OSError, self._http.HTTPException) as exc:
            raise ConnectionError(type(exc).__name__) from None
        finally:
            conn.close()

    def close(self) -> None:
        pass


def _multipart(files: Sequence[tuple[str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body of ``files`` as 'files' parts named by their paths."""
    import secrets

    if not files:
        return b"", ""
    boundary = "halomem-" + secrets.token_hex(16)
    out = bytearray()
    for name, data in files:
        quoted = name.replace("\\", "\\\\").replace('"', '\\"').replace("\r", " ").replace("\n", " ")
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{quoted}\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode("utf-8")
        out += data + b"\r\n"
    out += f"--{boundary}--\r\n".encode("ascii")
    return bytes(out), f"multipart/form-data; boundary={boundary}"


class Client:
    def __init__(self, url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT,
                 transport: "httpx2.BaseTransport | None" = None, direct: bool = False) -> None:
        """``direct``: use the standard library for a plain-http URL without a proxy (see module doc)."""
        if not token:
            raise AuthenticationError("no token: set HALOMEM_TOKEN")
        self.url = url.rstrip("/")
        self.consistency: str | None = None  # sent back with every request: reads see this client's writes
        headers = {"Authorization": f"Bearer {token}", "User-Agent": "halomem-client"}
        if direct and transport is None and DirectTransport.usable(self.url):
            self._http: PooledTransport | DirectTransport = DirectTransport(self.url, headers, timeout)
        else:
            self._http = PooledTransport(self.url, headers, timeout, transport)

    @classmethod
    def for_cli(cls, url: str, token: str) -> "Client":
        return cls(url, token, direct=True)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, *, json: Any = None, content: bytes | None = None,
              params: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> Any:
        headers = dict(headers or {})
        if self.consistency:  # the last write's position: a replica that serves our reads must have it
            headers[CONSISTENCY] = self.consistency
        if json is not None:
            content = jsonlib.dumps(json, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if params:
            path = f"{path}?{urlencode(params)}"
        try:
            reply = self._http.send(method, path, content, headers)
        except TimeoutError:
            raise ServiceUnreachableError(f"halomem server at {self.url} did not answer in time") from None
        except ConnectionError as exc:
            raise ServiceUnreachableError(f"cannot reach halomem server at {self.url}: {exc}") from None
        if reply.consistency:
            self.consistency = reply.consistency
        if reply.status >= 400:
            raise self._error(reply)
        try:
            return jsonlib.loads(reply.body)
        except ValueError:
            raise ServiceUnreachableError(f"{self.url} answered HTTP {reply.status} without JSON: is it a "
                                           "halomem server?") from None

    @staticmethod
    def _error(reply: Reply) -> HalomemError:
        try:
            body = jsonlib.loads(reply.body)
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        detail = body.get("detail") or body.get("error_description") or f"HTTP {reply.status}"
        return error_for_problem(reply.status, body.get("kind"), str(detail))

    # --- the operations (same names and results as halomem.ops.Operations) --------------------
    def whoami(self) -> dict[str, Any]:
        return self._call("GET", "/v1/whoami")

    @property
    def namespace(self) -> str:
        """The token's namespace (asked once)."""
        if not hasattr(self, "_namespace"):
            self._namespace = self.whoami()["namespace"]
        return self._namespace

    def search(self, query: str, *, k: int = 10, token_budget: int = 2000, sources: Sequence[str] | None = None,
               driver: str | None = None, as_of: str | None = None) -> SearchResult:
        body: dict[str, Any] = {"query": query, "k": k, "token_budget": token_budget}
        if as_of:
            body["as_of"] = as_of.isoformat() if hasattr(as_of, "isoformat") else as_of
        if sources:
            body["sources"] = list(sources)
        if driver:
            body["driver"] = driver
        data = self._call("POST", "/v1/search", json=body)
        return SearchResult(data["query"], data["namespace"], data["driver"], data["requested_driver"],
                            data["request_id"], [Hit.from_dict(h) for h in data["hits"]], data.get("fallback"),
                            data.get("dropped", 0), [], data.get("elapsed_ms", 0.0), data.get("as_of"))

    def remember(self, content: str, *, source: str | None = None,
                 provenance: dict[str, Any] | None = None) -> NewMemory:
        return NewMemory.from_dict(self._call("POST", "/v1/memories", json={"content": content, "source": source,
                                                                             "provenance": provenance}))

    def supersede(self, old_id: str, content: str, *, source: str | None = None,
                  provenance: dict[str, Any] | None = None) -> NewMemory:
        data = self._call("POST", f"/v1/memories/{_seg(old_id)}/supersede",
                          json={"content": content, "source": source, "provenance": provenance})
        return NewMemory.from_dict(data)

    def erase(self, memory_id: str, *, reason: str = "") -> Erased:
        return Erased.from_dict(self._call("POST", f"/v1/memories/{_seg(memory_id)}/erase", json={"reason": reason}))

    def history(self, memory_id: str) -> list[MemoryRow]:
        return [MemoryRow.from_dict(r) for r in self._call("GET", f"/v1/memories/{_seg(memory_id)}/history")["chain"]]

    def ingest_bytes(self, raw: bytes, *, fmt: str = "jsonl", skip_bad: bool = False,
                     label: str = "body.jsonl", **_: Any) -> IngestReport:
        data = self._call("POST", "/v1/memories:ingest", content=raw,
                          params={"skip_bad": str(skip_bad).lower(), "format": fmt, "name": label},
                          headers={"Content-Type": "text/csv" if fmt == "csv" else "application/x-ndjson"})
        return IngestReport(data["written"], [(s["line"], s["reason"]) for s in data["skipped"]], data["ids"],
                            data["namespace"], data.get("request_id"), data.get("unchanged", []),
                            [(s["old"], s["new"]) for s in data.get("superseded", [])], data.get("items", []))

    def ingest_documents(self, roots: Sequence[Any], files: Sequence[Any], *, fmt: str | None = None,
                         prune: bool = False, strict: bool = False, dry_run: bool = False,
                         progress: Any = None, **_: Any) -> dict[str, Any]:
        """Upload each root's files (intake.files.SourceFile) to POST /v1/documents; one report (the
        DocumentsJSON of every root merged)."""
        merged: dict[str, Any] = {}
        for root in roots:
            mine = [f for f in files if f.root == root.name]
            unreadable = [{"path": f.key, "reason": f.error or "unreadable"} for f in mine if f.data is None]
            body, content_type = _multipart([(f.path, f.data) for f in mine if f.data is not None])
            params = {"root": root.name, "prune": str(prune and root.whole).lower(), "strict": str(strict).lower(),
                      "dry_run": str(dry_run).lower(), **({"format": fmt} if fmt else {})}
            if strict and unreadable:
                from .errors import IngestError

                raise IngestError(f"{len(unreadable)} file(s) cannot be read: {unreadable[0]['path']}: "
                                  f"{unreadable[0]['reason']}; nothing was ingested (--strict)")
            report = self._call("POST", "/v1/documents", content=body, params=params,
                                headers={"Content-Type": content_type}) if body else {"skipped": []}
            report["skipped"] = unreadable + report.get("skipped", [])
            for key, value in report.items():
                if isinstance(value, list):
                    merged.setdefault(key, []).extend(value)
                elif key != "counts":
                    merged[key] = value
            if progress:
                progress(len(mine))
        merged["counts"] = {k: len(merged.get(k, [])) for k in ("written", "unchanged", "superseded", "retired",
                                                                "skipped")}
        merged.setdefault("namespace", self.namespace)
        return merged

    def ingest_file(self, path: Path, *, fmt: str | None = None, skip_bad: bool = False, **_: Any) -> IngestReport:
        from .errors import IngestError

        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise IngestError(f"cannot read {path}: {exc.strerror or exc}") from None
        fmt = (fmt or Path(path).suffix.lstrip(".") or "jsonl").lower()
        return self.ingest_bytes(raw, fmt="csv" if fmt == "csv" else "jsonl", skip_bad=skip_bad, label=str(path))

    def entities(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/entities")["entities"]

    def add_entity(self, name: str, aliases: Sequence[str] = ()) -> EntityAdded:
        return EntityAdded.from_dict(self._call("POST", "/v1/entities", json={"name": name, "aliases": list(aliases)}))

    def put_concept(self, path: str, content: str) -> ConceptStored:
        return ConceptStored.from_dict(self._call("PUT", f"/v1/concepts/{quote(path, safe='/')}",
                                                  json={"content": content}))

    def concepts(self, query: str, k: int = 10) -> "list[ScoredRef]":
        from .types import ScoredRef

        return [ScoredRef(**h) for h in self._call("POST", "/v1/concepts:search", json={"query": query, "k": k})["hits"]]

    def materialize_concept(self, path: str) -> NewMemory:
        data = self._call("POST", "/v1/concepts:materialize", json={"path": path})
        return NewMemory(data["id"], data["namespace"], data["source"], data.get("request_id"))

    def effective_policy(self, target: str | None = None) -> "Policy":
        from .policy.model import Policy

        return Policy.from_effective_json(self._call("GET", f"/v1/policies/{quote(target, safe='/')}" if target
                                                     else "/v1/policy"))

    def set_policy(self, target: str | None, policy: dict[str, Any], *, allow_unmounted: bool = False) -> "Policy":
        from .policy.model import Policy

        target = target or self.namespace
        body = {**policy, "allow_unmounted": True} if allow_unmounted else policy
        return Policy.from_effective_json(self._call("PUT", f"/v1/policies/{quote(target, safe='/')}", json=body))

    def clear_policy(self, target: str | None) -> bool:
        target = target or self.namespace
        return self._call("DELETE", f"/v1/policies/{quote(target, safe='/')}")["cleared"]

    def audit_tail(self, n: int = 20, action: str | None = None, before: int | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"n": n}
        if action:
            params["action"] = action
        if before:
            params["before"] = before
        return self._call("GET", "/v1/audit", params=params)["rows"]

    def who_saw(self, memory_id: str) -> WhoSaw:
        return WhoSaw.from_dict(self._call("GET", "/v1/audit/who-saw", params={"memory_id": memory_id}))

    def feedback(self, request_id: str, ref: str, verdict: str, note: str | None = None) -> Feedback:
        body: dict[str, Any] = {"request_id": request_id, "ref": ref, "verdict": verdict}
        if note:
            body["note"] = note
        return Feedback.from_dict(self._call("POST", "/v1/feedback", json=body))

    def namespaces(self) -> dict[str, Any]:
        return self._call("GET", "/v1/namespaces")

    def replay(self, seq: int) -> Replay:
        return Replay.from_dict(self._call("POST", f"/v1/audit/replay/{int(seq)}"))
