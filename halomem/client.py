"""A Python client of `halomem serve`, with the kernel's result types and error classes.

Built on httpx2, pydantic's maintained continuation of httpx (same API) and the HTTP client the
official MCP SDK already depends on: one HTTP client in the dependency tree, and unlike httpx 0.28
it does not import its command-line tool (click, pygments, rich) on import, 85 ms of every
remote CLI call.

    from halomem.client import Client
    with Client("http://127.0.0.1:8080", token) as hm:
        hm.remember("Deploys go through ArgoCD canaries", source="runbook")
        for hit in hm.search("how do we deploy").hits: print(hit.score, hit.content)

Every failure raises the same HalomemError subclass the kernel would (NotFoundError,
ConflictError, PermissionDeniedError, ...), rebuilt from the server's problem+json. Importing
this module does not import the database stack.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import quote

import httpx2

from .errors import AuthenticationError, DatabaseUnavailableError, HalomemError, error_for_problem
from .policy.model import Policy, parse_policy
from .results import Hit, IngestReport, MemoryRow, NewMemory, SearchResult
from .types import ScoredRef

DEFAULT_TIMEOUT = 60.0


def _seg(value: str) -> str:
    return quote(value, safe="")


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _row(data: dict[str, Any]) -> MemoryRow:
    return MemoryRow(**{**data, "t_valid_from": _when(data["t_valid_from"]), "t_valid_to": _when(data["t_valid_to"]),
                        "erased_at": _when(data["erased_at"])})


class Client:
    def __init__(self, url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT,
                 transport: httpx2.BaseTransport | None = None) -> None:
        if not token:
            raise AuthenticationError("no token: set HALOMEM_TOKEN")
        self.url = url.rstrip("/")
        # plain http has no certificates to verify: skip loading the CA bundle (30 ms of a CLI call)
        verify = not self.url.startswith("http://")
        self._http = httpx2.Client(base_url=self.url, timeout=timeout, transport=transport, verify=verify,
                                  headers={"Authorization": f"Bearer {token}", "User-Agent": "halomem-client"})

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx2.TimeoutException:
            raise DatabaseUnavailableError(f"halomem server at {self.url} did not answer in time") from None
        except httpx2.HTTPError as exc:
            raise DatabaseUnavailableError(f"cannot reach halomem server at {self.url}: {type(exc).__name__}") from None
        if response.status_code >= 400:
            raise self._error(response)
        return response.json()

    @staticmethod
    def _error(response: httpx2.Response) -> HalomemError:
        try:
            body = response.json()
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        detail = body.get("detail") or body.get("error_description") or f"HTTP {response.status_code}"
        return error_for_problem(response.status_code, body.get("kind"), str(detail))

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
               driver: str | None = None) -> SearchResult:
        body: dict[str, Any] = {"query": query, "k": k, "token_budget": token_budget}
        if sources:
            body["sources"] = list(sources)
        if driver:
            body["driver"] = driver
        data = self._call("POST", "/v1/search", json=body)
        return SearchResult(data["query"], data["namespace"], data["driver"], data["requested_driver"],
                            data["request_id"], [Hit(**h) for h in data["hits"]], data.get("fallback"),
                            data.get("dropped", 0), [], data.get("elapsed_ms", 0.0))

    def remember(self, content: str, *, source: str | None = None,
                 provenance: dict[str, Any] | None = None) -> NewMemory:
        data = self._call("POST", "/v1/memories", json={"content": content, "source": source,
                                                         "provenance": provenance})
        return NewMemory(data["id"], data["namespace"], data["source"], data.get("request_id"))

    def supersede(self, old_id: str, content: str, *, source: str | None = None,
                  provenance: dict[str, Any] | None = None) -> NewMemory:
        data = self._call("POST", f"/v1/memories/{_seg(old_id)}/supersede",
                          json={"content": content, "source": source, "provenance": provenance})
        return NewMemory(data["id"], data["namespace"], data["source"], data.get("request_id"))

    def erase(self, memory_id: str, *, reason: str = "") -> str:
        return self._call("POST", f"/v1/memories/{_seg(memory_id)}/erase", json={"reason": reason})["request_id"]

    def history(self, memory_id: str) -> list[MemoryRow]:
        return [_row(r) for r in self._call("GET", f"/v1/memories/{_seg(memory_id)}/history")["chain"]]

    def ingest_bytes(self, raw: bytes, *, fmt: str = "jsonl", skip_bad: bool = False,
                     label: str = "body") -> IngestReport:
        data = self._call("POST", "/v1/memories:ingest", content=raw,
                          params={"skip_bad": str(skip_bad).lower(), "format": fmt},
                          headers={"Content-Type": "application/x-ndjson" if fmt == "jsonl" else "text/csv"})
        return IngestReport(data["written"], [(s["line"], s["reason"]) for s in data["skipped"]], data["ids"],
                            data["namespace"], data.get("request_id"), data.get("unchanged", []),
                            [(s["old"], s["new"]) for s in data.get("superseded", [])])

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

    def add_entity(self, name: str, aliases: Sequence[str] = ()) -> tuple[int, int]:
        data = self._call("POST", "/v1/entities", json={"name": name, "aliases": list(aliases)})
        return data["id"], data["linked"]

    def put_concept(self, path: str, content: str) -> str:
        return self._call("PUT", f"/v1/concepts/{quote(path, safe='/')}", json={"content": content})["request_id"]

    def concepts(self, query: str, k: int = 10) -> list[ScoredRef]:
        return [ScoredRef(**h) for h in self._call("POST", "/v1/concepts:search", json={"query": query, "k": k})["hits"]]

    def materialize_concept(self, path: str) -> NewMemory:
        data = self._call("POST", "/v1/concepts:materialize", json={"path": path})
        return NewMemory(data["id"], data["namespace"], data["source"], data.get("request_id"))

    def effective_policy(self, target: str | None = None) -> Policy:
        data = self._call("GET", f"/v1/policies/{quote(target, safe='/')}" if target else "/v1/policy")
        source = data.pop("from")
        data.pop("namespace", None)
        return parse_policy(data, None if source == "default" else source)

    def set_policy(self, target: str | None, policy: dict[str, Any]) -> Policy:
        target = target or self.namespace
        data = self._call("PUT", f"/v1/policies/{quote(target, safe='/')}", json=policy)
        data.pop("namespace", None)
        return parse_policy(data, target)

    def clear_policy(self, target: str | None) -> bool:
        target = target or self.namespace
        return self._call("DELETE", f"/v1/policies/{quote(target, safe='/')}")["cleared"]

    def audit_tail(self, n: int = 20, action: str | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"n": n}
        if action:
            params["action"] = action
        return self._call("GET", "/v1/audit", params=params)["rows"]
