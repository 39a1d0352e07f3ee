"""A deliberately faulty sidecar for the mem0 fault tests: each attempt follows a scripted mode."""
from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FaultySidecar(ThreadingHTTPServer):
    """modes: ok, hang (3 s), 500, garbage, stray (adds a ref it was not sent), trickle (1 byte / 0.4 s)."""

    daemon_threads = True

    def __init__(self, modes: list[str]) -> None:
        self.modes = list(modes)
        self.request_ids: list[str] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001 - clients hang up on purpose
        pass

    def next_mode(self, request_id: str) -> str:
        with self.lock:
            self.request_ids.append(request_id)
            return self.modes.pop(0) if len(self.modes) > 1 else self.modes[0]

    def __enter__(self) -> "FaultySidecar":
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        req = json.loads(self.rfile.read(int(self.headers["content-length"])))
        mode = self.server.next_mode(self.headers.get("x-halomem-request-id", ""))
        refs = [{"ref": c["ref"], "score": 1.0 - i / 100} for i, c in enumerate(req["candidates"][: req["k"]])]
        if mode == "hang":
            time.sleep(3)
        if mode == "500":
            self._reply(500, b'{"error": "engine exploded"}')
        elif mode == "garbage":
            self._reply(200, b'{"refs": [{"ref": ')
        elif mode == "trickle":
            body = json.dumps({"refs": refs}).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            for byte in body:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.4)
        else:
            if mode == "stray":
                refs.insert(0, {"ref": "m_not_sent_to_me", "score": 1.0})
            self._reply(200, json.dumps({"refs": refs}).encode())

    def _reply(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass


if __name__ == "__main__":  # a subprocess sidecar that tests can kill mid-request
    server = FaultySidecar(sys.argv[1:] or ["hang"])
    print(server.url, flush=True)
    server.serve_forever()
