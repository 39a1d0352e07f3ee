"""The one request pipeline: what every request goes through, whichever transport carried it.

    request id -> authenticate -> rate limit -> fair share (halomem.admission) ->
    authorize (auth.rights, in halomem.ops) -> the operation -> exactly the documented audit rows ->
    one serializer -> one error mapping

A transport is an adapter around this: the HTTP edge (server.edge) for REST and MCP over HTTP,
the MCP message middleware (server.mcp_tools) for MCP over stdio, and the CLI's local trust
(halomem.ops.for_operator, no token). None of them authenticates, limits or audits on its own.

Audit rule (README "Audit trail"): every request gets exactly one row, except
- public routes (/healthz, /readyz, /metrics, /docs, /openapi.json) and MCP notifications: none;
- a search that fell back to baseline: its ``fallback`` row too;
- repeatable refusals (``REPEATABLE``: a bad token, a full bucket, a method or route that does
  not exist): the first of a window per kind
  (``refusal_window`` seconds, per principal, or for all unauthenticated callers together) gets
  its row; the rest of that window are counted, and the count is written as one summary row
  (``... suppressed=N``) when the window has closed, at the latest when the server stops. So a
  flood of bad requests costs the trail at most two rows a window.
A row is written under the *caller's own* namespace (never a target's: a refused admin request
cannot write into another organisation's trail), or under ``-`` when there is no caller.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from . import audit
from .admission import Admission, Shares
from .auth.rights import Caller
from .auth.store import PrincipalStore
from .db.replicas import Consistency
from .errors import AuthenticationError, HalomemError, RateLimitedError
from .ratelimit import DEFAULT_BURST, DEFAULT_RATE, RateLimiter
from .write.writer import new_request_id

log = logging.getLogger("halomem.server")

NO_CALLER_NS = audit.STORE_NS  # the namespace of audit rows for requests that have no caller
# refusals anyone can repeat cheaply, summarized per window: a bad token, a full bucket, a method or a
# route that does not exist (GET /mcp, a typo). A refused operation writes its own row instead.
REPEATABLE = ("unauthenticated", "rate-limited", "method-not-allowed", "not-found")
DEFAULT_REFUSAL_WINDOW = 60.0


@dataclass
class Request(audit.Trace):
    """One request in flight: its id (minted once, at the edge), what it asked, who asked."""

    route: str = ""  # "POST /v1/search", "mcp tools/call search": never a path's free text
    client: str = "-"  # the peer address (the rate-limit key before authentication)
    caller: Caller | None = None
    outcome: HalomemError | None = None  # why it was refused, when it was
    consistency: Consistency = field(default_factory=Consistency)  # read-your-writes (db.replicas)
    units: int = 0  # its weight in its caller's fair share while in flight (halomem.admission)

    @property
    def transport(self) -> str:
        if self.client == "stdio":
            return "mcp-stdio"
        if self.client == "library":
            return "library"
        return "mcp-http" if self.route.startswith("mcp") else "rest"


class RefusalLedger:
    """Counts repeatable refusals per key and window: which get a row, which a summary."""

    def __init__(self, window: float = DEFAULT_REFUSAL_WINDOW) -> None:
        self.window = window
        self._open: dict[tuple[str, str | None, str], list[float]] = {}  # key -> [opened at, suppressed]
        self._lock = threading.Lock()

    def admit(self, key: tuple[str, str | None, str]) -> tuple[bool, int]:
        """(does this refusal get its own row, refusals counted in the window it closes). A refusal
        inside an open window is only counted; one after it opens the next window."""
        now = time.monotonic()
        with self._lock:
            entry = self._open.get(key)
            if entry is not None and now - entry[0] < self.window:
                entry[1] += 1
                return False, 0
            self._open[key] = [now, 0]
            return True, int(entry[1]) if entry else 0

    def closed(self, everything: bool = False) -> list[tuple[tuple[str, str | None, str], int]]:
        """Remove the windows that have closed (all, with ``everything``); return those that
        counted refusals as (key, suppressed)."""
        now = time.monotonic()
        out = []
        with self._lock:
            for key, (opened, suppressed) in list(self._open.items()):
                if everything or now - opened >= self.window:
                    del self._open[key]
                    if suppressed:
                        out.append((key, int(suppressed)))
        return out


class Pipeline:
    """Authentication, rate limits and the audit accounting of every request, for one kernel."""

    def __init__(self, kernel, *, rate: float = DEFAULT_RATE, burst: int = DEFAULT_BURST,  # noqa: ANN001
                 refusal_window: float = DEFAULT_REFUSAL_WINDOW, shares: Shares = Shares()) -> None:
        self.kernel = kernel
        self.principals = PrincipalStore(kernel.engine)
        self.per_principal = RateLimiter(rate, burst)
        self.per_client = RateLimiter(rate, burst, per="client address")  # charged by failed authentications only
        self.ledger = RefusalLedger(refusal_window)
        self.admission = Admission(shares)
        self.last_write: dict[str, int] = {}  # principal -> WAL position of its last write (this process)
        self._writes_lock = threading.Lock()

    # --- the steps ---------------------------------------------------------------------------
    def begin(self, route: str, client: str = "-", request_id: str | None = None) -> Request:
        return Request(request_id or new_request_id(), route=route, client=client)

    def authenticate(self, request: Request, token: object) -> Caller:
        """The caller a presented token stands for, rate-limited per principal. Failed
        authentications are limited per client address: past its bucket they get 429 instead of
        401. A valid token is never refused for its address (agents behind one NAT, one of them
        misconfigured, must not lock the others out)."""
        try:
            principal = self.principals.authenticate(token)
        except AuthenticationError:
            self.per_client.check(request.client)
            raise
        request.caller = principal.caller(self.principals.lineage_root(principal))
        self.per_principal.check(request.caller.share_key)  # a lineage's tokens share one bucket
        remembered = self.last_write.get(principal.id)
        if remembered and remembered > (request.consistency.after or 0):
            request.consistency.after = remembered
        return request.caller

    async def admit(self, request: Request, body_bytes: int, sleep, *, costly: bool = False) -> None:  # noqa: ANN001
        """Take the request's units of its principal's and organisation's shares (waiting briefly,
        without a thread, for its turn) or refuse it with 429; ``release`` gives them back.
        ``costly``: a read whose cost grows with the trail, which yields to others first."""
        caller = request.caller
        if caller is None:
            return
        units = self.admission.cost(body_bytes)
        await self.admission.admit(caller.share_key, caller.namespace.path, units, sleep, defer=costly)
        request.units = units

    def bulk_yields(self, request: Request):  # noqa: ANN201 - a context manager
        """While the request runs, its bulk work pauses for other callers (admission.bulk_pause)."""
        from contextlib import nullcontext

        from .embed.low_priority import yielding

        if request.caller is None or not request.units:
            return nullcontext()
        return yielding(self.admission.bulk_pause(request.caller.share_key))

    def release(self, request: Request) -> None:
        if request.units and request.caller is not None:
            self.admission.release(request.caller.share_key, request.caller.namespace.path, request.units)
            request.units = 0

    def operations(self, request: Request):  # noqa: ANN201 - halomem.ops.Operations
        from .ops import Operations

        if request.caller is None:
            raise AuthenticationError("missing bearer token (Authorization: Bearer hm_...)")
        return Operations(self.kernel, request.caller, request.request_id, request.consistency)

    def finish(self, request: Request, error: HalomemError | None, status: int | None = None) -> None:
        """Write the request's own audit row unless the operation already wrote one; call it
        before the response leaves, so a client that reads the trail next finds the row."""
        ns, principal = self._who(request)
        if request.consistency.wrote and principal:
            with self._writes_lock:
                self.last_write[principal] = max(self.last_write.get(principal, 0), request.consistency.wrote)
        if request.rows:
            return
        if error is None:
            record: dict = {"route": request.route, "outcome": "ok"}
        else:
            record = {"route": request.route, "outcome": "refused", "kind": error.slug}
            if status:
                record["status"] = status
            if error.slug in REPEATABLE:
                admitted, earlier = self.ledger.admit((ns, principal, error.slug))
                if not admitted:
                    return
                if earlier:
                    self._summary(ns, principal, error.slug, earlier)
        self._append(ns, principal, record, request.request_id)
        request.rows += 1

    # --- summaries ---------------------------------------------------------------------------
    def write_summaries(self, everything: bool = False) -> int:
        """One row per closed window of repeatable refusals that counted any; returns the rows.
        The server calls it periodically and at shutdown (``everything``)."""
        closed = self.ledger.closed(everything)
        for (ns, principal, slug), suppressed in closed:
            self._summary(ns, principal, slug, suppressed)
        return len(closed)

    def _summary(self, ns: str, principal: str | None, slug: str, suppressed: int) -> None:
        self._append(ns, principal, {"route": "requests", "outcome": "refused", "kind": slug,
                                     "suppressed": suppressed, "window_s": self.ledger.window}, new_request_id())

    def close(self) -> None:
        try:
            self.write_summaries(everything=True)
        except Exception:  # noqa: BLE001 - the database may be gone at shutdown; say so, never hang
            log.warning("refusal summaries not written at shutdown")

    # --- helpers -----------------------------------------------------------------------------
    @staticmethod
    def _who(request: Request) -> tuple[str, str | None]:
        caller = request.caller
        return (caller.namespace.path, caller.principal_id) if caller else (NO_CALLER_NS, None)

    def _append(self, ns: str, principal: str | None, record: dict, request_id: str) -> None:
        with audit.acting_as(principal), self.kernel.engine.begin() as conn:
            audit.append(conn, ns, "request", record, request_id)


def error_for_status(status: int) -> HalomemError:
    """The error a bare HTTP status stands for (a response made outside the error tree)."""
    from .errors import error_for_problem

    if status == 429:
        return RateLimitedError("rate limited")
    return error_for_problem(status, None, f"HTTP {status}")

