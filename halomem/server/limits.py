"""Request limits: body size (413) as ASGI middleware, and a per-principal rate limit (429).

The rate limiter is a token bucket per principal, in this process's memory: with several
`halomem serve` processes behind a balancer, each enforces the limit on what it sees.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from ..errors import PayloadTooLargeError, RateLimitedError
from .problems import from_error

DEFAULT_MAX_BODY = 16 * 1024 * 1024
DEFAULT_RATE = 100.0  # requests per second per principal
DEFAULT_BURST = 200


class BodyLimit:
    """Refuse bodies over ``max_bytes`` before a route reads them, declared or streamed."""

    def __init__(self, app: Callable[..., Any], max_bytes: int = DEFAULT_MAX_BODY) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = PayloadTooLargeError(f"request body over the server's limit of {self.max_bytes} bytes")
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await from_error(too_large)(scope, receive, send)
            return
        seen = 0
        started = False

        async def counted_receive() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _Overflow(str(too_large))
            return message

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except _Overflow:
            if not started:
                await from_error(too_large)(scope, receive, send)


class _Overflow(PayloadTooLargeError):
    """Raised inside the route's body read; the error handlers answer 413 like any HalomemError."""


class RateLimiter:
    def __init__(self, rate: float = DEFAULT_RATE, burst: int = DEFAULT_BURST) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, key: str) -> None:
        """Take one token from ``key``'s bucket, or raise RateLimitedError with the wait."""
        if self.rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                raise RateLimitedError(f"more than {self.rate:g} requests/s from this principal",
                                       retry_after=(1.0 - tokens) / self.rate)
            self._buckets[key] = (tokens - 1.0, now)
