"""A Python client of `halomem serve`, with the kernel's result types and error classes.

Built on httpx2, pydantic's maintained continuation of httpx (same API) and the HTTP client the
official MCP SDK already depends on: one HTTP client in the dependency tree, and unlike httpx 0.28
it does not import its command-line tool (click, pygments, rich) on import.

The CLI makes one or two requests per process, for which a pooled client is all cost: httpx2,
httpcore2, h11 and anyio take ~100 ms to import, a third of a remote `halomem search`. So
``Client.for_cli`` sends a direct plain-HTTP request (no proxy configured) through the standard
library's ``http.client``; anything else (https, a proxy, a library user) goes through httpx2.

    from halomem_client import Client
    with Client("http://127.0.0.1:8080", token) as hm:
        hm.remember("Deploys go through ArgoCD canaries", source="runbook")
        for hit in hm.search("how do we deploy").hits: print(hit.score, hit.content)

Every failure raises the same HalomemError subclass the kernel would (NotFoundError,
ConflictError, PermissionDeniedError, ...), rebuilt from the server's problem+json. The
operations themselves are data (halomem_client.operations): this client and AsyncClient perform
the same calls.
"""
from __future__ import annotations

import functools
import json as jsonlib
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence
from urllib.parse import quote, urlencode, urlsplit

from .errors import AuthenticationError, ServiceUnreachableError, error_for_problem
from .operations import OPERATIONS, OWN_NAMESPACE, Call

if TYPE_CHECKING:
    import httpx2

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


def request_parts(path: str, json: Any, content: bytes | None, params: Sequence[tuple[str, str]],
                  content_type: str | None, consistency: str | None) -> tuple[str, bytes | None, dict[str, str]]:
    """The path with its query, the body and the headers of one request (both clients)."""
    headers: dict[str, str] = {}
    if consistency:  # the last write's position: a replica that serves our reads must have it
        headers[CONSISTENCY] = consistency
    if json is not None:
        content = jsonlib.dumps(json, ensure_ascii=False).encode("utf-8")
        content_type = "application/json"
    if content_type:
        headers["Content-Type"] = content_type
    if params:
        path = f"{path}?{urlencode(list(params))}"
    return path, content, headers


def answer(url: str, reply: Reply, text: bool = False) -> Any:
    """A reply's JSON (``text``: its text), or the kernel's error class for its problem+json (both
    clients)."""
    if reply.status >= 400:
        try:
            body = jsonlib.loads(reply.body)
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        detail = body.get("detail") or body.get("error_description") or f"HTTP {reply.status}"
        raise error_for_problem(reply.status, body.get("kind"), str(detail))
    if text:
        return reply.body.decode("utf-8")
    try:
        return jsonlib.loads(reply.body)
    except ValueError:
        raise ServiceUnreachableError(f"{url} answered HTTP {reply.status} without JSON: is it a "
                                      "halomem server?") from None


def headers_for(token: str) -> dict[str, str]:
    if not token:
        raise AuthenticationError("no token: set HALOMEM_TOKEN")
    return {"Authorization": f"Bearer {token}", "User-Agent": "halomem-client"}


class Client:
    """The operations of halomem_client.operations over HTTP, one call at a time (``namespace``:
    the token's, asked once)."""

    def __init__(self, url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT,
                 transport: "httpx2.BaseTransport | None" = None, direct: bool = False) -> None:
        """``direct``: use the standard library for a plain-http URL without a proxy (see module doc)."""
        headers = headers_for(token)
        self.url = url.rstrip("/")
        self.consistency: str | None = None  # sent back with every request: reads see this client's writes
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
              params: Sequence[tuple[str, str]] = (), content_type: str | None = None, text: bool = False) -> Any:
        path, content, headers = request_parts(path, json, content, params, content_type, self.consistency)
        try:
            reply = self._http.send(method, path, content, headers)
        except TimeoutError:
            raise ServiceUnreachableError(f"halomem server at {self.url} did not answer in time") from None
        except ConnectionError as exc:
            raise ServiceUnreachableError(f"cannot reach halomem server at {self.url}: {exc}") from None
        if reply.consistency:
            self.consistency = reply.consistency
        return answer(self.url, reply, text)

    def _perform(self, call: Call) -> Any:
        if OWN_NAMESPACE in call.path:
            call = replace(call, path=call.path.replace(OWN_NAMESPACE, quote(self.namespace, safe="/")))
        return call.read(self._call(call.method, call.path, json=call.json, content=call.content,
                                    params=call.params, content_type=call.content_type, text=call.text))

    @property
    def namespace(self) -> str:
        """The token's namespace (asked once)."""
        if not hasattr(self, "_namespace"):
            self._namespace = self.whoami()["namespace"]
        return self._namespace


def _performed(build: Callable[..., Call]) -> Callable[..., Any]:
    @functools.wraps(build)
    def operation(self: Client, *args: Any, **kwargs: Any) -> Any:
        return self._perform(build(*args, **kwargs))

    return operation


for _operation in OPERATIONS:
    setattr(Client, _operation.name, _performed(_operation.build))
