"""The HTTP side of the request pipeline (halomem.pipeline), as pure ASGI around the whole app:
REST and MCP over HTTP go through the same steps.

Per request: mint the id (X-Request-Id, the problem body's and the audit row's), authenticate the
bearer token (not on public routes), rate-limit, read the body within the server's limit (declared
or streamed: 413 either way), take the caller's fair share (by the body's size), run the app with the caller bound, and write the request's audit row
before the response starts. Anything that escapes the app's own handlers becomes problem+json.
"""
from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timezone
from typing import Any

import anyio.to_thread

from .. import audit
from ..db.replicas import parse_lsn
from ..errors import (HalomemError, InvalidInputError, MethodNotAllowedError, PayloadTooLargeError,
                      ServiceUnreachableError)
from ..pipeline import Pipeline, Request, error_for_status
from .problems import from_error, from_unexpected
from .console import CONSOLE_PATH, HEADERS as CONSOLE_HEADERS

# /metrics: its own token; /console: static files (server.console), every action it takes is a /v1 call
PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/docs", "/openapi.json", "/metrics", CONSOLE_PATH})
access = logging.getLogger("halomem.access")
DOCS_ASSETS = "/docs/assets"  # the packaged Swagger UI's files (server.openapi)
MCP_PATH = "/mcp"
CONSISTENCY_HEADER = b"halomem-consistency"  # read-your-writes token: the WAL position of your last write


def current(scope_or_request: Any) -> Request | None:
    """The pipeline's request for an ASGI scope or a Starlette request."""
    scope = getattr(scope_or_request, "scope", scope_or_request)
    return (scope.get("state") or {}).get("halomem_request")


def _header(scope: dict[str, Any], name: bytes) -> str:
    return dict(scope.get("headers") or []).get(name, b"").decode("latin-1")


def check_target(scope: dict[str, Any]) -> None:
    """The path and query string a caller sent are text: percent-decoded they must be UTF-8 without
    control characters (a NUL, an escape, a lone surrogate's bytes). Refused here, 400, for every
    route at once, before a parameter can reach a handler or the database."""
    from urllib.parse import unquote_to_bytes

    for part in (scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape"),
                 scope.get("query_string") or b""):
        try:
            text = unquote_to_bytes(part).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInputError("the request's path or query string is not UTF-8 text") from None
        if any(ch < " " or "\x7f" <= ch <= "\x9f" for ch in text):
            raise InvalidInputError("the request's path or query string holds control characters")


def bearer(scope: dict[str, Any]) -> str | None:
    scheme, _, token = _header(scope, b"authorization").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def check_mcp_method(scope: dict[str, Any]) -> None:
    """MCP over HTTP here is stateless: every message is a POST answered in full. A standing GET
    stream (server-to-client notifications of a session) would have nothing to carry and would hold
    a connection and a file descriptor for as long as a client likes, so it is not offered: 405, as
    the MCP transport allows, and so is DELETE (there is no session to end). No caller can hold
    streams open, however many tokens it mints."""
    if scope["path"] == MCP_PATH and scope["method"] != "POST":
        raise MethodNotAllowedError("MCP here is stateless: POST each message (no standing GET stream, "
                                    "no session to DELETE)", allow="POST")


class Edge:
    def __init__(self, app: Any, pipeline: Pipeline, max_body: int, routes: Any = (), metrics: Any = None,
                 access_log: bool = False, costly: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.costly = costly  # routes ("GET /v1/audit") whose cost grows with the trail: they defer
        self.pipeline = pipeline
        self.max_body = max_body
        self.routes = routes  # the app's routes: audit rows name a route's template, never the path
        self.metrics = metrics  # server.metrics.Metrics, or None
        self.access_log = access_log

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        public = (scope["path"] in PUBLIC_PATHS or scope["path"].startswith(DOCS_ASSETS + "/")
                  or scope["path"].startswith(CONSOLE_PATH + "/"))
        client = (scope.get("client") or ("-",))[0]
        request = self.pipeline.begin(f"{scope['method']} {self._route_of(scope)}", client)
        began = time.perf_counter()
        state = scope.setdefault("state", {})
        state["halomem_request"], state["request_id"] = request, request.request_id
        request.consistency.after = parse_lsn(_header(scope, CONSISTENCY_HEADER))  # a client's token, if any
        started = False

        async def send_out(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                status = int(message["status"])
                error = request.outcome or (error_for_status(status) if status >= 400 else None)
                if not public and not (scope["path"] == MCP_PATH and status == 202):  # 202: MCP notifications
                    await anyio.to_thread.run_sync(self.pipeline.finish, request, error, status)
                self._observe(request, status, error, time.perf_counter() - began)
                headers = _protected(scope["path"], [*message.get("headers", []),
                                                     (b"x-request-id", request.request_id.encode())])
                token = request.consistency.token() if self.pipeline.kernel.router.enabled else None
                if token:  # read replicas: send it back and your next read sees what you wrote
                    headers.append((CONSISTENCY_HEADER, token.encode()))
                message["headers"] = headers
            await send(message)

        try:
            check_target(scope)
            if not public:
                await anyio.to_thread.run_sync(self.pipeline.authenticate, request, bearer(scope))
            check_mcp_method(scope)
            body = await self._read_body(scope, receive)
            await self.pipeline.admit(request, len(body), anyio.sleep, costly=request.route in self.costly)
            caller = request.caller
            with audit.tracing(request), audit.acting_as(caller.principal_id if caller else None), \
                    self.pipeline.bulk_yields(request):
                await self.app(scope, _replay(body, receive), send_out)
        except anyio.get_cancelled_exc_class():
            # only the server's shutdown cancels a request, after its drain: its writes roll back
            # with their transaction; the client hears 503 (sent straight to the socket: the thread
            # pool is going away, so no audit row), and the log holds server.app's one line on it,
            # not uvicorn's traceback of the cancellation
            if not started:
                stopped = ServiceUnreachableError("the server stopped before this request finished; retry it")
                await from_error(stopped, request.request_id)(scope, receive, send)
        except Exception as exc:  # noqa: BLE001 - the last line of defence: never a traceback
            if started:
                raise
            error = _halomem_error(exc)
            request.outcome = error or HalomemError("internal error")
            response = from_error(error, request.request_id) if error else from_unexpected(exc, request.request_id)
            await response(scope, receive, send_out)
        finally:
            self.pipeline.release(request)

    def _observe(self, request: Request, status: int, error: HalomemError | None, seconds: float) -> None:
        """Metrics and the access log: ids, route, status and time; never a token or content."""
        caller = request.caller
        if self.metrics is not None:
            self.metrics.observe_request(request.route, status, caller.namespace.path if caller else None,
                                         error.slug if error else None)
        if self.access_log:
            access.info(json.dumps({"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
                                    "request_id": request.request_id, "principal": caller.principal_id if caller
                                    else None, "route": request.route, "status": status,
                                    "ms": round(seconds * 1000, 2), "client": request.client}))

    def _route_of(self, scope: dict[str, Any]) -> str:
        """The template of the route a path asks for (free text such as ids stays out)."""
        from starlette.routing import Match

        for route in self.routes:
            if route.matches(scope)[0] is not Match.NONE:
                return getattr(route, "path", "?")
        return "(unknown route)"

    async def _read_body(self, scope: dict[str, Any], receive: Any) -> bytes:
        """The whole request body, refused past the limit whether declared (before reading a byte)
        or streamed."""
        too_large = PayloadTooLargeError(f"request body over the server's limit of {self.max_body} bytes")
        declared = _header(scope, b"content-length")
        if declared.isdigit() and int(declared) > self.max_body:
            raise too_large
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_body:
                raise too_large
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        return b"".join(chunks)


def _protected(path: str, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Every answer under /console carries the console's policy (CSP, no framing, no sniffing), its
    errors and redirects included; every other answer but the packaged docs is never cached (a
    token's secret, memories, audit rows: nothing for a shared cache or the browser's history)."""
    if path == CONSOLE_PATH or path.startswith(CONSOLE_PATH + "/"):
        fixed = {name.lower().encode(): value.encode() for name, value in CONSOLE_HEADERS.items()}
    elif path == "/docs" or path.startswith(DOCS_ASSETS + "/"):
        return headers
    else:
        fixed = {b"cache-control": b"no-store"}
    return [(k, v) for k, v in headers if k.lower() not in fixed] + list(fixed.items())


def _replay(body: bytes, receive: Any) -> Any:
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the client's disconnect, as the server reports it

    return replay


def _halomem_error(exc: BaseException) -> HalomemError | None:
    """The HalomemError behind ``exc``, unwrapping the exception groups task groups make."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, HalomemError) else None
