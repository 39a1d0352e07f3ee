"""The reference sidecar: a real HTTP ranking service for the mem0 driver, on loopback.

It reranks exactly the candidates it is sent with an engine of its own (bm25s; MiniLM cosine
blended in when the minilm extra is installed and asked for), coalesces a retry carrying the same
x-halomem-request-id onto the in-flight computation, and keeps only a small cache of recent
answers, which is derived and rebuildable.
"""
from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

MAX_BODY_BYTES = 8 * 1024 * 1024
RECENT_ANSWERS = 256


class BM25Engine:
    mode = "bm25s"

    def rank(self, query: str, candidates: list[dict[str, str]], k: int) -> list[dict[str, Any]]:
        import bm25s

        texts = [c["content"] for c in candidates]
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        n = min(len(texts), max(k, 1))
        docs, scores = retriever.retrieve(tokens, k=n, show_progress=False)
        top = float(scores[0][0]) if n and scores[0][0] > 0 else 1.0
        out = [{"ref": candidates[int(i)]["ref"], "score": round(float(s) / top, 6)}
               for i, s in zip(docs[0], scores[0]) if s > 0]
        return sorted(out, key=lambda r: (-r["score"], r["ref"]))


@dataclass
class Stats:
    requests: int = 0
    computed: int = 0
    coalesced: int = 0


class Coalescer:
    """One computation per request id: a retry joins the in-flight future or reuses its answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, Future] = OrderedDict()
        self.stats = Stats()

    def run(self, request_id: str | None, compute: Callable[[], Any]) -> Any:
        with self._lock:
            self.stats.requests += 1
            future = self._recent.get(request_id) if request_id else None
            owner = future is None
            if owner:
                self.stats.computed += 1
                future = Future()
                if request_id:
                    self._recent[request_id] = future
                    while len(self._recent) > RECENT_ANSWERS:
                        self._recent.popitem(last=False)
            else:
                self.stats.coalesced += 1
        if owner:
            try:
                future.set_result(compute())
            except Exception as exc:  # the waiting retry sees the same failure
                future.set_exception(exc)
                with self._lock:
                    self._recent.pop(request_id or "", None)
        return future.result()


def make_handler(engine: Any, coalescer: Coalescer, delay: float = 0.0) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "halomem-sidecar/1"

        def log_message(self, fmt: str, *args: Any) -> None:  # quiet by default
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            body = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            if self.path == "/healthz":
                s = coalescer.stats
                self._send(200, {"ok": True, "mode": engine.mode, "requests": s.requests, "computed": s.computed,
                                 "coalesced": s.coalesced})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:  # noqa: N802
            if self.path != "/plan":
                self._send(404, {"error": "not found"})
                return
            try:
                length = int(self.headers.get("content-length", "0"))
                if not 0 < length <= MAX_BODY_BYTES:
                    raise ValueError("bad content-length")
                req = json.loads(self.rfile.read(length))
                query, candidates, k = req["query"], req["candidates"], int(req["k"])
                if not isinstance(query, str) or not isinstance(candidates, list):
                    raise ValueError("query must be text and candidates a list")
                for c in candidates:
                    if not isinstance(c.get("ref"), str) or not isinstance(c.get("content"), str):
                        raise ValueError("each candidate needs ref and content strings")
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                self._send(400, {"error": f"bad request: {exc}"})
                return

            def compute() -> list[dict[str, Any]]:
                if delay:
                    time.sleep(delay)
                return engine.rank(query, candidates, k) if candidates else []

            try:
                refs = coalescer.run(self.headers.get("x-halomem-request-id"), compute)
            except Exception as exc:  # noqa: BLE001 - report engine failures as 500
                self._send(500, {"error": f"{type(exc).__name__}: {exc}"})
                return
            self._send(200, {"refs": refs})

    return Handler


class SidecarServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0, engine: Any = None, delay: float = 0.0) -> None:
        self.coalescer = Coalescer()
        self.engine = engine or BM25Engine()
        super().__init__((host, port), make_handler(self.engine, self.coalescer, delay))

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001
        """A client that timed out and hung up is routine for a sidecar, not a traceback."""

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start_background(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="halomem-sidecar", daemon=True)
        thread.start()
        return thread
