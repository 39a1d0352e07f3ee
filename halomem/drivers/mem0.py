"""mem0: a thin in-process client for an out-of-process ranking engine (a sidecar).

    POST /plan {query, candidates:[{ref,content}], budget, k} -> {refs:[{ref,score}]}
    GET /healthz -> {ok:true, mode:"..."}

The sidecar can only reorder what it was sent: candidates go out with the request (at most 200),
refs it returns that were not sent are dropped with a warning, and content always comes from the
sent candidates. Each attempt has a hard 1.5 s deadline (a server trickling bytes cannot stretch
it); two attempts share one x-halomem-request-id so the sidecar can coalesce the retry. Any
failure on the final attempt raises DriverUnavailableError and the kernel degrades to baseline.

DRIVER BOUNDARY: imports only halomem.types, halomem.drivers (DriverUnavailableError) and the
standard library.
"""
from __future__ import annotations

import http.client
import json
import logging
import os
import time
import uuid
from urllib.parse import urlsplit

from halomem.drivers import DriverUnavailableError
from halomem.types import Capabilities, RetrieverQuery, ScoredRef, estimate_tokens, fit_budget, rank_key

CANDIDATE_CAP = 200
ATTEMPT_SECONDS = 1.5
ATTEMPTS = 2
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
URL_VARIABLE = "HALOMEM_SIDECAR_URL"

log = logging.getLogger(__name__)  # a child of the kernel's "halomem" logger


class SidecarError(Exception):
    """One failed attempt (transport, timeout, status or body)."""


class Mem0Driver:
    name = "mem0"

    def __init__(self, url: str | None = None, *, attempt_seconds: float = ATTEMPT_SECONDS,
                 attempts: int = ATTEMPTS) -> None:
        url = url or os.environ.get(URL_VARIABLE, "")
        if not url:
            raise DriverUnavailableError(f"no sidecar URL configured (set {URL_VARIABLE})")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise DriverUnavailableError(f"sidecar URL {url!r} must be http(s)://host:port")
        self.url = url.rstrip("/")
        self._parts = parts
        self.attempt_seconds = attempt_seconds
        self.attempts = attempts

    def capabilities(self) -> Capabilities:
        return Capabilities(graph=False, streaming=False)

    def plan(self, q: RetrieverQuery) -> list[ScoredRef]:
        if q.k <= 0:
            return []
        sent = self._candidates(q)
        if not sent:
            return []
        body = json.dumps({"query": q.query, "candidates": [{"ref": r, "content": c} for r, c in sent.items()],
                           "budget": q.token_budget, "k": q.k}).encode("utf-8")
        request_id = uuid.uuid4().hex
        failures = []
        for attempt in range(1, self.attempts + 1):
            try:
                scores = self._parse(self._post(body, request_id))
                break
            except SidecarError as exc:
                failures.append(f"attempt {attempt}: {exc}")
                if attempt < self.attempts:
                    log.warning("sidecar %s attempt %d failed (%s); retrying with the same request id",
                                self.url, attempt, exc)
        else:
            raise DriverUnavailableError(f"sidecar {self.url} failed ({'; '.join(failures)})")
        stray = [ref for ref in scores if ref not in sent]
        if stray:
            log.warning("sidecar %s returned %d ref(s) it was not sent; dropped", self.url, len(stray))
        scored = [ScoredRef(ref, "L2", ref, min(1.0, max(0.0, s)), sent[ref], estimate_tokens(sent[ref]))
                  for ref, s in scores.items() if ref in sent]
        return fit_budget(sorted(scored, key=rank_key), q.k, q.token_budget)

    @staticmethod
    def _candidates(q: RetrieverQuery) -> dict[str, str]:
        """At most CANDIDATE_CAP: lexical preselection first, then the vector lane's nearest rows."""
        view = q.view
        lexical = getattr(view, "lexical_candidates", None)
        pool = lexical(q.query, CANDIDATE_CAP) if lexical else view.candidates(CANDIDATE_CAP)
        sent = {c.ref: c.content for c in pool[:CANDIDATE_CAP]}
        if len(sent) < CANDIDATE_CAP:
            [embedding] = view.embed([q.query])
            for hit in view.vector_search(embedding, min(CANDIDATE_CAP, max(q.k * 5, 50))):
                if len(sent) >= CANDIDATE_CAP:
                    break
                sent.setdefault(hit.ref, hit.content)
        return sent

    def _post(self, body: bytes, request_id: str) -> bytes:
        deadline = time.monotonic() + self.attempt_seconds
        conn_cls = http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(self._parts.hostname, self._parts.port, timeout=self.attempt_seconds)
        try:
            conn.request("POST", (self._parts.path.rstrip("/") or "") + "/plan", body=body,
                         headers={"content-type": "application/json", "x-halomem-request-id": request_id})
            conn.sock.settimeout(max(0.01, deadline - time.monotonic()))
            response = conn.getresponse()
            if not 200 <= response.status < 300:
                raise SidecarError(f"HTTP {response.status}")
            chunks, size = [], 0
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SidecarError(f"timed out after {self.attempt_seconds:g}s")
                conn.sock.settimeout(remaining)
                chunk = response.read1(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise SidecarError("response too large")
                chunks.append(chunk)
            return b"".join(chunks)
        except SidecarError:
            raise
        except TimeoutError:
            raise SidecarError(f"timed out after {self.attempt_seconds:g}s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise SidecarError(f"{type(exc).__name__}: {exc}") from None
        finally:
            conn.close()

    @staticmethod
    def _parse(raw: bytes) -> dict[str, float]:
        try:
            data = json.loads(raw)
            refs = data["refs"]
            scores: dict[str, float] = {}
            for item in refs:
                ref, score = item["ref"], float(item["score"])
                if not isinstance(ref, str) or score != score:  # NaN
                    raise ValueError("bad ref or score")
                scores[ref] = max(score, scores.get(ref, float("-inf")))
            return scores
        except (ValueError, KeyError, TypeError) as exc:
            raise SidecarError(f"malformed body ({type(exc).__name__})") from None
