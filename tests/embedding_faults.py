"""A small OpenAI-compatible embeddings server of the tests' own, on 127.0.0.1, that misbehaves on
purpose: 429 with Retry-After, 500, wrong dimension, too slow, and answers no embedding service
should give (NaN, infinite, zero, huge or string values, too many dimensions, a body that is not JSON
or not embeddings, an error body echoing the request's key). Its good answers are the hash
embedder's vectors (a real server's contract is tested against infinity-emb)."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from halomem.embed import HashEmbedder


class FaultyEmbeddings:
    """``script``: what each next request gets ("ok", "429", "500", "wrongdim", "slow", or one of
    MALFORMED); "ok" after."""

    MALFORMED = ("nan", "inf", "zero", "huge", "strings", "toomany", "notjson", "nodata", "flat", "echo401", "echo400")

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.script: list[str] = []
        self.requests: list[tuple[float, dict]] = []
        self.retry_after = "1"
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                outer.requests.append((time.monotonic(), {"path": self.path, "auth": self.headers.get("Authorization"),
                                                          **body}))
                mode = outer.script.pop(0) if outer.script else "ok"
                if mode == "slow":
                    time.sleep(3)
                if mode == "429":
                    return self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": outer.retry_after})
                if mode == "500":
                    return self._send(500, {"error": {"message": "boom"}})
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                if mode in ("echo401", "echo400"):  # a service that echoes what it was sent, key included
                    return self._send(int(mode[4:]), {"error": {"message": f"bad request {body!r} with "
                                                               f"{self.headers.get('Authorization')}"}})
                if mode == "notjson":
                    return self._raw(200, b"<html>upstream proxy error</html>", "application/json")
                if mode == "nodata":
                    return self._send(200, {"object": "list", "model": body.get("model")})
                vectors = HashEmbedder(outer.dim + (3 if mode == "wrongdim" else 0)).embed(texts)
                vectors = [v if any(v) else [1.0] + v[1:] for v in vectors]  # a text without words: not zero
                bent = {"nan": lambda v: [float("nan")] * len(v), "inf": lambda v: [float("inf")] + v[1:],
                        "zero": lambda v: [0.0] * len(v), "huge": lambda v: [1e308] * len(v),
                        "strings": lambda v: [str(x) for x in v], "toomany": lambda v: [0.5] * 20000,
                        "flat": lambda v: 0.5}.get(mode)
                if bent:
                    vectors = [bent(v) for v in vectors]
                self._send(200, {"object": "list", "model": body.get("model"),
                                 "data": [{"object": "embedding", "index": i, "embedding": v}
                                          for i, v in enumerate(vectors)],
                                 "usage": {"prompt_tokens": 0, "total_tokens": 0}})

            def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
                self._raw(status, json.dumps(body).encode(), "application/json", headers)  # NaN/Infinity as JSON allows

            def _raw(self, status: int, data: bytes, kind: str, headers: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FaultyEmbeddings":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
