"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1: the stand-in for the team's
chat model (Ollama, vLLM, OpenAI...). It speaks the real protocol, POST /v1/chat/completions with a
bearer token, and answers from a script: a function of the request (its JSON and which schema it
asks for) returning a Reply: a completion's text, an HTTP status, a delay, a raw body or a huge one.
Every request is kept (headers included, their names in lower case) for the tests to inspect."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
    text: str | None = None  # the completion's message content
    status: int = 200
    delay: float = 0.0  # seconds before the answer's headers
    body: bytes | None = None  # sent as is, instead of a completion
    huge: int = 0  # stream this many bytes of a never-ending JSON string
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, int] | None = None


def completion(text: str, usage: dict[str, int] | None = None) -> bytes:
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": "scripted",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}],
                       "usage": usage or {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}).encode()


class ScriptedLLM:
    """``with ScriptedLLM(script) as llm: llm.url`` (the base URL, ending in /v1)."""

    def __init__(self, script: Callable[[dict[str, Any], str], Reply]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                owner.requests.append({"path": self.path, "json": request,
                                       "headers": {k.lower(): v for k, v in self.headers.items()}})
                schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("name", "")
                reply = owner.script(request, schema)
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    if reply.huge:
                        self.send_response(reply.status)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(reply.huge + 2))
                        self.end_headers()
                        self.wfile.write(b'"')
                        chunk = b"x" * 65536
                        for _ in range(reply.huge // len(chunk)):
                            self.wfile.write(chunk)
                        return
                    body = reply.body if reply.body is not None else (
                        completion(reply.text or "", reply.usage) if reply.status == 200 else
                        json.dumps({"error": {"message": "scripted failure, echoing: " +
                                              self.headers.get("Authorization", "")}}).encode())
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading (a huge body cut off, a timeout)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedLLM":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def calls(self, schema: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.requests
                if schema is None or (r["json"].get("response_format") or {}).get("json_schema", {}).get("name") == schema]


def turns_of(request: dict[str, Any]) -> dict[int, str]:
    """The numbered turns a halomem_facts request shows: {number: 'speaker: text'}."""
    text = request["messages"][-1]["content"]
    out = {}
    for line in text.splitlines():
        if line.startswith("[") and "] " in line:
            number, said = line[1:].split("] ", 1)
            if number.isdigit():
                out[int(number)] = said
    return out


def candidates_of(request: dict[str, Any]) -> dict[str, str]:
    """The memories a halomem_update request shows: {id: text}, in the order shown."""
    text = request["messages"][-1]["content"]
    return {line.split()[2]: json.loads(line.split("): ", 1)[1]) for line in text.splitlines()
            if line.startswith("- id ")}


def new_fact_of(request: dict[str, Any]) -> str:
    """The new fact a halomem_update request is about."""
    first = request["messages"][-1]["content"].splitlines()[0]
    return json.loads(first.split(": ", 1)[1])
