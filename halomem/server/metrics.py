"""What the service is doing, for Prometheus (prometheus_client), kept off the hot path: counters
and histograms are in-process atomics, observed once per request at the edge.

Label sets are bounded: routes are the app's templates (or "(unknown route)"), statuses are
numbers, drivers the mounted ones, and a caller's namespace is reduced to its top segment (its
organisation), the first MAX_TENANTS of them by name and "other" after that. /metrics is off
unless HALOMEM_METRICS_TOKEN is set, and then asks for it as a bearer token: label values name
organisations, which are nobody else's business.
"""
from __future__ import annotations

import hmac
import threading
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

MAX_TENANTS = 50
LATENCY_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)


class Metrics:
    def __init__(self, token: str | None) -> None:
        self.token = token or None
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("halomem_requests", "Requests by route (or MCP method/tool), status and the "
                                "caller's organisation", ("route", "status", "tenant"), registry=r)
        self.refusals = Counter("halomem_refusals", "Refused requests by kind", ("kind",), registry=r)
        self.search_seconds = Histogram("halomem_search_seconds", "Search latency by the driver that served",
                                        ("driver",), buckets=LATENCY_BUCKETS, registry=r)
        self.fallbacks = Counter("halomem_driver_fallbacks", "Searches served by baseline instead of the policy's "
                                 "driver", ("requested",), registry=r)
        self.pool_in_use = Gauge("halomem_db_pool_connections_in_use", "Database connections checked out",
                                 ("pool",), registry=r)
        self.database = Counter("halomem_reads_served", "Reads by the database that served them", ("database",),
                                registry=r)
        self.replica_lag = Gauge("halomem_replica_lag_seconds", "How far the read replica's replay is behind",
                                 registry=r)
        self._tenants: set[str] = set()
        self._lock = threading.Lock()

    def tenant(self, namespace: str | None) -> str:
        if not namespace:
            return "-"
        top = namespace.split("/", 1)[0]
        with self._lock:
            if top in self._tenants or len(self._tenants) < MAX_TENANTS:
                self._tenants.add(top)
                return top
        return "other"

    def observe_request(self, route: str, status: int, namespace: str | None, refused_kind: str | None) -> None:
        self.requests.labels(route, str(status), self.tenant(namespace)).inc()
        if refused_kind:
            self.refusals.labels(refused_kind).inc()

    def observe_search(self, driver: str, seconds: float, fallback_from: str | None, database: str) -> None:
        self.search_seconds.labels(driver).observe(seconds)
        self.database.labels("primary" if database == "primary" else "replica").inc()
        if fallback_from:
            self.fallbacks.labels(fallback_from).inc()

    def observe_pools(self, pools: dict[str, Any]) -> None:
        for name, engine in pools.items():
            if engine is not None:
                self.pool_in_use.labels(name).set(engine.pool.checkedout())

    def allowed(self, authorization: str | None) -> bool:
        """Whether a scrape may read: the configured token, compared in constant time."""
        if self.token is None or not authorization:
            return False
        scheme, _, presented = authorization.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), self.token.encode())

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
