"""Assemble the service: FastAPI routes (/v1), MCP over streamable HTTP (/mcp), /healthz, limits
and the one error mapping. `create_app` takes a booted kernel; `serve` runs it under uvicorn."""
from __future__ import annotations

import contextlib
import logging
import time
from typing import Any, AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..errors import HalomemError, InvalidInputError, MethodNotAllowedError, NotFoundError, SchemaMismatchError
from ..kernel import Kernel
from ..pipeline import DEFAULT_REFUSAL_WINDOW, Pipeline
from .api import build_router
from .edge import Edge, current
from .limits import DEFAULT_MAX_BODY
from .mcp_tools import build_mcp
from .openapi import docs_routes, problem_media_type
from .problems import from_error, from_unexpected

log = logging.getLogger("halomem.server")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _validation_detail(exc: RequestValidationError) -> str:
    first = (exc.errors() or [{}])[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
    return f"{where}: {first.get('msg', 'invalid')}"[:300]


def create_app(kernel: Kernel, *, host: str = "127.0.0.1", port: int = 8080, rate: float = 100.0,
               burst: int = 200, max_body: int = DEFAULT_MAX_BODY, refusal_window: float = DEFAULT_REFUSAL_WINDOW,
               pipeline: Pipeline | None = None) -> Any:
    pipeline = pipeline or Pipeline(kernel, rate=rate, burst=burst, refusal_window=refusal_window)
    security = None
    if host in LOOPBACK:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
    mcp = build_mcp(kernel, pipeline, http=True)
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True,
                                      transport_security=security, host=host, max_request_body_size=max_body)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield
        pipeline.close()  # the refusal summaries still counting

    app = FastAPI(title="halomem", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Governed organizational memory for AI agents. Every /v1 route and /mcp need "
                              "`Authorization: Bearer hm_...`; the token decides the caller's namespace. Errors "
                              "are application/problem+json (RFC 9457) with the request's id.")
    docs_routes(app, app.openapi_url)
    problem_media_type(app)

    def refused(request: Request, error: HalomemError) -> Any:
        """The one error mapping: remember why (for the audit row), answer problem+json."""
        held = current(request)
        if held is not None:
            held.outcome = error
        return from_error(error, getattr(request.state, "request_id", None))

    @app.exception_handler(HalomemError)
    async def halomem_error(request: Request, exc: HalomemError) -> Any:
        return refused(request, exc)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Any:
        return refused(request, SchemaMismatchError(_validation_detail(exc)))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Any:
        if exc.status_code == 404:
            return refused(request, NotFoundError(f"no route {request.method} {request.url.path[:200]}"))
        if exc.status_code == 405:
            return refused(request, MethodNotAllowedError(f"{request.method} is not allowed here"))
        return refused(request, InvalidInputError(str(exc.detail)[:300]))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Any:
        held = current(request)
        if held is not None:
            held.outcome = HalomemError("internal error")
        return from_unexpected(exc, getattr(request.state, "request_id", None))

    @app.get("/healthz", summary="Liveness and database reachability (no token needed)")
    def healthz() -> Any:
        with kernel.engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        return {"status": "ok", "version": __version__}

    api = build_router(pipeline)
    app.include_router(api)
    for route in mcp_app.routes:  # /mcp only: every other path is the API's (problem+json 404s)
        app.router.routes.append(route)
    app.add_middleware(Edge, pipeline=pipeline, max_body=max_body, routes=[*api.routes, *mcp_app.routes])
    app.state.pipeline = pipeline
    return app


def _every(seconds: float, name: str, work: Any) -> None:
    """Run ``work`` every ``seconds`` in a daemon thread (the database may be briefly away: say so,
    try next time)."""
    import threading

    def loop() -> None:
        while True:
            time.sleep(seconds)
            try:
                work()
            except Exception:  # noqa: BLE001
                log.warning("%s: not done this round", name)

    threading.Thread(target=loop, name=name, daemon=True).start()


def serve(kernel: Kernel, *, host: str, port: int, rate: float, burst: int, max_body: int,
          access_log: bool = True, heads_every: float = 60.0,
          refusal_window: float = DEFAULT_REFUSAL_WINDOW) -> None:
    import sys

    import uvicorn

    handler = logging.StreamHandler(sys.stderr)  # the server log: tracebacks of bugs go here, never to clients
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    log.propagate = False
    pipeline = Pipeline(kernel, rate=rate, burst=burst, refusal_window=refusal_window)
    app = create_app(kernel, host=host, port=port, max_body=max_body, pipeline=pipeline)
    if heads_every > 0:  # the audit head outside the database while serving (audit.heads)
        _every(heads_every, "audit-heads", kernel.record_audit_head)
    _every(max(1.0, refusal_window), "refusal-summaries", pipeline.write_summaries)
    # SIGTERM as SIGINT: uvicorn stops accepting, drains in-flight requests (at most 10 s), runs the
    # lifespan's shutdown, then re-raises the signal, which the CLI turns into its clean exit
    uvicorn.run(app, host=host, port=port, log_level="info" if access_log else "warning", access_log=access_log,
                timeout_graceful_shutdown=10)
