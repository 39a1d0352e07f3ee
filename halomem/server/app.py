"""Assemble the service: FastAPI routes (/v1), MCP over streamable HTTP (/mcp), /healthz, limits
and the one error mapping. `create_app` takes a booted kernel; `serve` runs it under uvicorn."""
from __future__ import annotations

import contextlib
import logging
import time
from typing import Any, AsyncIterator

from fastapi import FastAPI, Request
from starlette.responses import Response
from fastapi.exceptions import RequestValidationError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..errors import (AuthenticationError, DatabaseUnavailableError, HalomemError, InvalidInputError,
                      MethodNotAllowedError, NotFoundError, SchemaMismatchError)
from ..admission import Shares
from ..config import DEFAULT_RETENTION_DAYS
from ..kernel import Kernel
from ..pipeline import DEFAULT_REFUSAL_WINDOW, Pipeline
from .api import COSTLY_READS, build_router
from .console import console_routes
from .edge import Edge, current
from .limits import DEFAULT_MAX_BODY
from .mcp_tools import build_mcp
from .metrics import Metrics
from .openapi import docs_routes, problem_media_type, problems
from .problems import from_error, from_unexpected

log = logging.getLogger("halomem.server")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _validation_detail(exc: RequestValidationError) -> str:
    first = (exc.errors() or [{}])[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
    return f"{where}: {first.get('msg', 'invalid')}"[:300]


def create_app(kernel: Kernel, *, host: str = "127.0.0.1", port: int = 8080, rate: float = 100.0,
               burst: int = 200, max_body: int = DEFAULT_MAX_BODY, refusal_window: float = DEFAULT_REFUSAL_WINDOW,
               pipeline: Pipeline | None = None, metrics_token: str | None = None, access_log: bool = False) -> Any:
    pipeline = pipeline or Pipeline(kernel, rate=rate, burst=burst, refusal_window=refusal_window)
    metrics = Metrics(metrics_token)
    kernel.searcher.observers.append(metrics.observe_search)
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
    app.router.redirect_slashes = False  # a redirect would be built from the request's Host header
    docs_routes(app, app.openapi_url)
    console_routes(app)
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

    @app.get("/readyz", summary="Ready to serve: the database answers and its schema is this halomem's (no token)",
             responses=problems(503))
    def readyz() -> Any:
        from ..db.migrations import LATEST, _read_meta

        with kernel.engine.connect() as conn:
            found = _read_meta(conn).get("schema_version")
        if found != str(LATEST):
            raise DatabaseUnavailableError(f"schema v{found} is not this halomem's v{LATEST}: run halomem init")
        return {"status": "ready", "version": __version__, "schema_version": LATEST,
                "replicas": [r.name for r in kernel.router.replicas]}

    @app.get("/metrics", include_in_schema=False)
    def metrics_page(request: Request) -> Any:
        if metrics.token is None:
            raise NotFoundError("metrics are off: set HALOMEM_METRICS_TOKEN and scrape with it as a bearer token")
        if not metrics.allowed(request.headers.get("authorization")):
            raise AuthenticationError("metrics need Authorization: Bearer $HALOMEM_METRICS_TOKEN")
        metrics.observe_pools({"primary": kernel.engine, "reader": kernel.reader_engine})
        for replica in kernel.router.replicas:
            try:
                lag = replica.lag_seconds()
            except Exception:  # noqa: BLE001 - a dead replica has no lag to report
                lag = None
            if lag is not None:
                metrics.replica_lag.set(lag)
        body, media_type = metrics.exposition()
        return Response(body, media_type=media_type)

    api = build_router(pipeline)
    app.include_router(api)
    for route in mcp_app.routes:  # /mcp only: every other path is the API's (problem+json 404s)
        app.router.routes.append(route)
    app.add_middleware(Edge, pipeline=pipeline, max_body=max_body, routes=[*api.routes, *mcp_app.routes],
                       metrics=metrics, access_log=access_log, costly=COSTLY_READS)
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


FULL_VERIFY_EVERY = 24 * 3600.0


def _verify_in_background(kernel: Kernel) -> None:
    """Verify the chain while serving: at start from the last verified position (so an admin's
    status check finds little left to do), then all of it once a day (a status check recomputes only
    the rows after the last verified position: the daily pass catches an edit further back). Both
    yield the interpreter between batches; a broken chain is logged."""
    import threading

    def loop() -> None:
        full = False
        while True:
            try:
                kernel.maintain_audit(full=full)
            except Exception:  # noqa: BLE001 - the database may be briefly away: try at the next pass
                log.warning("audit verification: not done this round")
            full = True
            time.sleep(FULL_VERIFY_EVERY)

    threading.Thread(target=loop, name="audit-verify", daemon=True).start()


def serve(kernel: Kernel, *, host: str, port: int, rate: float, burst: int, max_body: int,
          access_log: bool = True, heads_every: float = 60.0,
          refusal_window: float = DEFAULT_REFUSAL_WINDOW, shares: Shares = Shares(),
          query_retention_days: float = DEFAULT_RETENTION_DAYS, drain_seconds: float = 10.0) -> None:
    import sys

    import uvicorn

    handler = logging.StreamHandler(sys.stderr)  # the server log: tracebacks of bugs go here, never to clients
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    log.propagate = False
    import os

    pipeline = Pipeline(kernel, rate=rate, burst=burst, refusal_window=refusal_window, shares=shares)
    if access_log:  # one JSON line per request on stderr (server.edge): never a token, never content
        access = logging.getLogger("halomem.access")
        access.addHandler(logging.StreamHandler(sys.stderr))
        access.setLevel(logging.INFO)
        access.propagate = False
    app = create_app(kernel, host=host, port=port, max_body=max_body, pipeline=pipeline, access_log=access_log,
                     metrics_token=os.environ.get("HALOMEM_METRICS_TOKEN", "").strip() or None)
    if heads_every > 0:  # the audit head outside the database while serving (audit.heads)
        _every(heads_every, "audit-heads", kernel.record_audit_head)
    _verify_in_background(kernel)
    _every(max(1.0, refusal_window), "refusal-summaries", pipeline.write_summaries)
    _every(3600.0, "retention", kernel.expire)  # ttl policies: close what present reads already leave out
    if query_retention_days > 0:  # search query texts are user data (audit.seen): kept only this long
        kernel.prune_queries(query_retention_days)
        _every(3600.0, "query-retention", lambda: kernel.prune_queries(query_retention_days))
    # SIGTERM as SIGINT: uvicorn stops accepting, drains in-flight requests (at most drain_seconds),
    # runs the lifespan's shutdown, then re-raises the signal, which the CLI turns into its clean exit
    try:
        uvicorn.run(app, host=host, port=port, log_level="info" if access_log else "warning", access_log=False,
                    timeout_graceful_shutdown=drain_seconds)
    finally:
        _abandon_stragglers(kernel)


def _abandon_stragglers(kernel: Kernel) -> None:
    """After the drain, a request still running in a worker thread (a maximal batch embeds for
    minutes) would hold the process at exit until it ends (Python joins such threads before its
    exit hooks). Its write has not committed, so it rolls back with the connection: run the exit
    hooks now (the kernel's close records the audit head; an embedded server this process started
    stops) and exit with the code the stop would have had."""
    import atexit
    import os
    import sys
    import threading

    stuck = [t for t in threading.enumerate() if t is not threading.current_thread() and t.is_alive()
             and not t.daemon]
    if not stuck:
        return
    log.warning("stopping with %d request(s) still running after the drain: their writes roll back", len(stuck))
    interrupted = sys.exc_info()[1]
    code = 143 if type(interrupted).__name__ == "Terminated" else 130 if isinstance(interrupted, KeyboardInterrupt) \
        else 0
    try:
        kernel.close()
        atexit._run_exitfuncs()  # what a normal exit would run, after the threads it would wait for
    finally:
        print(f"halomem: stopped; {len(stuck)} unfinished request(s) abandoned", file=sys.stderr, flush=True)
        os._exit(code)
