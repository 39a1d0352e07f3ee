"""Drive halomem's MCP server with the official SDK client (streamable HTTP or stdio)."""
from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


class McpSession:
    """A synchronous facade over one SDK client session. The session lives in one task on its own
    event-loop thread (the SDK's task groups must be entered and left by the same task)."""

    def __init__(self, url: str | None = None, token: str | None = None, stdio=None) -> None:  # noqa: ANN001
        self._calls: queue.Queue = queue.Queue()
        self._ready: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(url, token, stdio),), daemon=True)
        self._thread.start()
        error = self._ready.get(timeout=120)
        if error is not None:
            raise error

    async def _main(self, url, token, stdio) -> None:  # noqa: ANN001
        try:
            if stdio is not None:
                target = stdio
            else:
                http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
                target = streamable_http_client(url + "/mcp", http_client=http)
            async with Client(target) as client:
                self._ready.put(None)
                while True:
                    job = await asyncio.to_thread(self._calls.get)
                    if job is None:
                        return
                    method, args, reply = job
                    try:
                        reply.put((True, await getattr(client, method)(*args)))
                    except Exception as exc:  # noqa: BLE001 - handed to the caller's thread
                        reply.put((False, exc))
        except Exception as exc:  # noqa: BLE001
            self._ready.put(exc)

    def _run(self, method: str, *args: Any) -> Any:
        reply: queue.Queue = queue.Queue()
        self._calls.put((method, args, reply))
        ok, value = reply.get(timeout=120)
        if not ok:
            raise value
        return value

    def tools(self) -> list[str]:
        return [t.name for t in self._run("list_tools").tools]

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
        """(ok, the structured result or the error text)."""
        ok, value, _ = self.call_with_text(tool, arguments)
        return ok, value

    def call_with_text(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any, str]:
        """(ok, the structured result or the error text, the text a model reads)."""
        result = self._run("call_tool", tool, arguments)
        text = "".join(getattr(c, "text", "") for c in result.content)
        if result.is_error:
            return False, text.removeprefix(f"Error executing tool {tool}: "), text
        return True, result.structured_content, text

    def list_tools(self) -> list[Any]:
        return list(self._run("list_tools").tools)

    def close(self) -> None:
        self._calls.put(None)
        self._thread.join(timeout=30)
