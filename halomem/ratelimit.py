"""Rate limits (429): a token bucket per key (a principal, or a client address that failed to
authenticate), charged by the request pipeline (halomem.pipeline) for every transport.

Buckets live in this process's memory: with several `halomem serve` processes behind a balancer,
each enforces the limit on what it sees.
"""
from __future__ import annotations

import threading
import time

from .errors import RateLimitedError
DEFAULT_RATE = 100.0  # requests per second per principal
DEFAULT_BURST = 200


class RateLimiter:
    def __init__(self, rate: float = DEFAULT_RATE, burst: int = DEFAULT_BURST, per: str = "principal") -> None:
        self.per = per  # what a key stands for, in the refusal's message
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
                raise RateLimitedError(f"more than {self.rate:g} requests/s from this {self.per}",
                                       retry_after=(1.0 - tokens) / self.rate)
            self._buckets[key] = (tokens - 1.0, now)
