"""Assemble the service: FastAPI routes (/v1), MCP over streamable HTTP (/mcp), /healthz, limits
and the one error mapping. `create_app` takes a booted kernel; `serve` runs it under uvicorn."""
from __future__ import annotations

import contextlib
import logging
import time
import uuid
from typing import Any, AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..errors import HalomemError
from ..kernel import Kernel
from .api import build_router
from .limits import DEFAULT_MAX_BODY, BodyLimit, RateLimiter
from .mcp_tools import TokenVerifier, build_mcp, caller_from_http
from .problems import from_error, from_unexpected, problem

log = logging.getLogger("halomem.server")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _validation_detail(exc: RequestValidationError) -> str:
    first = (exc.errors() or [{}])[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
    return f"{where}: {first.get('msg', 'invalid')}"[:300]


def create_app(kernel: Kernel, *, host: str = "127.0.0.1", port: int = 8080, rate: float = 100.0,
               burst: int = 200, max_body: int = DEFAULT_MAX_BODY) -> Any:
    base_url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
    security = None
    if host in LOOPBACK:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
    mcp = build_mcp(kernel, caller_from_http, token_verifier=TokenVerifier(kernel),
                    auth=AuthSettings(issuer_url=base_url, resource_server_url=None))
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True,
                                      transport_security=security, host=host, max_request_body_size=max_body)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield

    app = FastAPI(title="halomem", version=__version__, lifespan=lifespan,
                  description="Governed organizational memory for AI agents. Every /v1 route and /mcp need "
                              "`Authorization: Bearer hm_...`; the token decides the caller's namespace.")

    @app.exception_handler(HalomemError)
    async def halomem_error(request: Request, exc: HalomemError) -> Any:
        return from_error(exc, getattr(request.state, "request_id", None))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Any:
        return problem(422, "invalid-input", "invalid input", _validation_detail(exc), exit_code=3,
                       request_id=getattr(request.state, "request_id", None))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Any:
        slug = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
        return problem(exc.status_code, slug, str(exc.detail), str(exc.detail),
                       exit_code=4 if exc.status_code == 404 else 3,
                       request_id=getattr(request.state, "request_id", None))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Any:
        return from_unexpected(exc, getattr(request.state, "request_id", None))

    @app.get("/healthz", summary="Liveness and database reachability (no token needed)")
    def healthz() -> Any:
        with kernel.engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        return {"status": "ok", "version": __version__}

    app.include_router(build_router(kernel, RateLimiter(rate, burst)))
    app.mount("/", mcp_app)  # last: serves /mcp (with the SDK's bearer auth) and nothing else
    app.add_middleware(BodyLimit, max_bytes=max_body)
    app.add_middleware(RequestIds)
    return app


class RequestIds:
    """Give every request an id (the audit row's, and the X-Request-Id header), and turn anything
    that escapes the routes' error handlers into problem+json. Pure ASGI: it never wraps the body
    stream, so a route's errors reach the handlers unchanged."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        started = False

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:  # noqa: BLE001 - the last line of defence: never a traceback
            if started:
                raise
            error = _halomem_error(exc)
            response = from_error(error, request_id) if error else from_unexpected(exc, request_id)
            await response(scope, receive, send_with_id)


def _halomem_error(exc: BaseException) -> HalomemError | None:
    """The HalomemError behind ``exc``, unwrapping the exception groups task groups make."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, HalomemError) else None


def _record_heads_every(kernel: Kernel, seconds: float) -> None:
    """Keep the audit head outside the database while serving (audit.heads)."""
    import threading

    def loop() -> None:
        while True:
            time.sleep(seconds)
            try:
                kernel.record_audit_head()
            except Exception:  # noqa: BLE001 - the database may be briefly away; try next time
                log.warning("audit head not recorded this round")

    threading.Thread(target=loop, name="audit-heads", daemon=True).start()


def serve(kernel: Kernel, *, host: str, port: int, rate: float, burst: int, max_body: int,
          access_log: bool = True, heads_every: float = 60.0) -> None:
    import sys

    import uvicorn

    handler = logging.StreamHandler(sys.stderr)  # the server log: tracebacks of bugs go here, never to clients
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    log.propagate = False
    app = create_app(kernel, host=host, port=port, rate=rate, burst=burst, max_body=max_body)
    if heads_every > 0:
        _record_heads_every(kernel, heads_every)
    uvicorn.run(app, host=host, port=port, log_level="info" if access_log else "warning", access_log=access_log,
                timeout_graceful_shutdown=5)
