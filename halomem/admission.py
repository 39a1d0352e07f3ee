"""Fair sharing: how much of the server one principal, or one organisation, may hold at once.

A principal here is a share: the root of a minting lineage (auth.store.lineage_root), so the tokens
a principal mints share its share rather than multiplying it. A token bucket (halomem.ratelimit)
bounds how many requests a principal *sends* per second; on two cores a principal saturates the
machine long before its bucket empties, and every other caller's search slows down with it. So the request pipeline also bounds what a caller *holds*: its requests
in flight, weighed by their size. Each request costs one unit, plus one per ``COST_BYTES`` of its
body (a maximal 6 MiB batch costs a principal's whole share, never more, so it still runs).

A request over its principal's share (``per_principal`` units) or its organisation's (``per_org``:
an organisation is a namespace's first segment) waits for its turn, looking again after 2, 4, ... up
to 32 ms, without holding a worker thread, for at most ``wait`` seconds; then, or when ``max_waiting`` of its
principal's requests already wait, it is refused: 429 with Retry-After. Callers under their share
never wait. Defaults are sized for 2 cores (README "Fair sharing"); 0 turns a limit off.

A principal with requests waiting asks for more than its share, and gets only what others leave: its
next request also waits while a principal within its share is in flight or was within the last
``ACTIVE_GAP`` seconds (a sequential caller between two requests), so the two never contend for the
cores. Deference is bounded: after ``DEFER_MAX`` seconds of it one request goes ahead anyway.
Costly reads (the audit's listing and status, a policy report, who-saw, replay, an eval: their cost
grows with the trail) defer the same way before they start, whatever the caller's share.
Bulk work inside a request (a maximal batch's embedding) defers the same way between its chunks
(``bulk_pause``), for at most ``BULK_YIELD`` times the time it just worked: it keeps at least a
fifth of the machine while others are served, and all of it when nobody else is.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from .errors import RateLimitedError

COST_BYTES = 64 * 1024  # a body's size adds one unit per this many bytes
DEFAULT_PER_PRINCIPAL = 1  # on 2 cores: one principal's request beside anyone else's (bench serve --noisy)
DEFAULT_PER_ORG = 2
# requests in flight on the whole server: fewer than the database pool's connections (10 + 10 overflow,
# db.engine), so however many principals and organisations call at once, a reserve of connections and
# file descriptors stays for the server's own work (health checks, audit heads and summaries)
DEFAULT_PER_SERVER = 16
DEFAULT_WAIT = 5.0  # seconds a request over its share may wait for its turn
DEFAULT_MAX_WAITING = 32  # requests of one principal waiting at once; more are refused at once
POLL = 0.002  # seconds before a waiting request's first look at its share again; doubles up to POLL_MAX
POLL_MAX = 0.032
ACTIVE_GAP = 0.015  # a caller whose request ended this recently is still active (its next is on its way)
DEFER_MAX = 0.5  # the longest a principal over its share defers to callers within theirs
BULK_YIELD = 4.0  # bulk work pauses up to this many times the time it worked since its last pause
BULK_PAUSE_MAX = 1.0  # seconds, at most, of one such pause
BULK_POLL = 0.002


@dataclass(frozen=True)
class Shares:
    per_principal: int = DEFAULT_PER_PRINCIPAL
    per_org: int = DEFAULT_PER_ORG
    per_server: int = DEFAULT_PER_SERVER
    wait: float = DEFAULT_WAIT
    max_waiting: int = DEFAULT_MAX_WAITING


def organisation(namespace: str) -> str:
    return namespace.split("/", 1)[0]


class Admission:
    """Units in flight per principal and per organisation; ``admit`` takes them, ``release`` gives
    them back. One lock, no thread held while waiting (the async edge awaits its sleep)."""

    def __init__(self, shares: Shares = Shares()) -> None:
        self.shares = shares
        self._held: dict[str, int] = {}  # "p:<principal>" / "o:<organisation>" -> units in flight
        self._waiting: dict[str, int] = {}  # principal -> its requests waiting
        self._active: dict[str, float] = {}  # principal -> when its last request ended (monotonic)
        self._deferring: dict[str, float] = {}  # principal over its share -> since when it defers
        self._lock = threading.Lock()

    def cost(self, body_bytes: int) -> int:
        """Units a request of ``body_bytes`` takes: never more than the smallest share, so it can run."""
        limits = [n for n in (self.shares.per_principal, self.shares.per_org, self.shares.per_server) if n > 0]
        return max(1, min([1 + body_bytes // COST_BYTES, *limits]))

    def _try(self, keys: tuple[tuple[str, int], ...], units: int, principal: str, defer: bool = False) -> bool:
        with self._lock:
            if any(limit > 0 and self._held.get(key, 0) + units > limit for key, limit in keys):
                return False
            if (defer or self._waiting.get(principal)) and self._defers(principal):
                return False
            self._deferring.pop(principal, None)
            for key, _ in keys:
                self._held[key] = self._held.get(key, 0) + units
            return True

    def _defers(self, principal: str) -> bool:
        """Whether ``principal``, over its share, must leave the server to another caller now."""
        now = time.monotonic()
        if now - self._deferring.setdefault(principal, now) >= DEFER_MAX:
            return False
        return self._others_active(principal, now)

    def _others_active(self, principal: str, now: float) -> bool:
        """Whether a principal within its share, other than ``principal``, is in flight or was just now."""
        for other, ended in list(self._active.items()):
            if now - ended > ACTIVE_GAP:
                del self._active[other]
        return any(other != principal and not self._waiting.get(other)
                   for other in {*self._active, *(key[2:] for key in self._held if key.startswith("p:"))})

    def bulk_pause(self, principal: str) -> Callable[[], None]:
        """A pause for ``principal``'s bulk work (embed.low_priority.yielding): called between its
        chunks, from a worker thread, it waits while another caller is served, bounded by the
        time the work has had since the last pause."""
        last = [time.monotonic()]

        def pause() -> None:
            now = time.monotonic()
            deadline = now + min(BULK_PAUSE_MAX, (now - last[0]) * BULK_YIELD)
            while now < deadline:
                with self._lock:
                    if not self._others_active(principal, now):
                        break
                time.sleep(BULK_POLL)
                now = time.monotonic()
            last[0] = time.monotonic()
        return pause

    def _keys(self, principal: str, namespace: str) -> tuple[tuple[str, int], ...]:
        return (("p:" + principal, self.shares.per_principal), ("o:" + organisation(namespace), self.shares.per_org),
                ("s:", self.shares.per_server))

    async def admit(self, principal: str, namespace: str, units: int,
                    sleep: Callable[[float], Awaitable[None]], *, defer: bool = False) -> None:
        """Take ``units`` of both shares, waiting up to ``shares.wait`` for them; else RateLimitedError.
        ``defer``: a costly read (an audit listing, a long report) that yields to callers in flight
        the way a principal over its share does, for at most DEFER_MAX."""
        keys = self._keys(principal, namespace)
        if self._try(keys, units, principal, defer):
            return
        with self._lock:
            if self._waiting.get(principal, 0) >= self.shares.max_waiting:
                raise self._refusal()
            self._waiting[principal] = self._waiting.get(principal, 0) + 1
        try:
            deadline, pause = time.monotonic() + self.shares.wait, POLL
            while time.monotonic() < deadline:
                await sleep(min(pause, max(0.0, deadline - time.monotonic())))
                if self._try(keys, units, principal, defer):
                    return
                pause = min(POLL_MAX, pause * 2)
            raise self._refusal()
        finally:
            with self._lock:
                self._waiting[principal] -= 1
                if not self._waiting[principal]:
                    del self._waiting[principal]
                    self._deferring.pop(principal, None)

    def release(self, principal: str, namespace: str, units: int) -> None:
        with self._lock:
            self._active[principal] = time.monotonic()
            for key, _ in self._keys(principal, namespace):
                left = self._held.get(key, 0) - units
                if left > 0:
                    self._held[key] = left
                else:
                    self._held.pop(key, None)

    def held(self) -> dict[str, int]:
        """Units in flight per key (tests, metrics)."""
        with self._lock:
            return dict(self._held)

    def _refusal(self) -> RateLimitedError:
        return RateLimitedError(f"over this caller's share of the server ({self.shares.per_principal} requests in "
                                f"flight per principal, {self.shares.per_org} per organisation): retry shortly",
                                retry_after=1.0)
