"""The MCP face: tools an agent's model calls, over streamable HTTP (`/mcp`) or stdio.

Every inbound request goes through halomem.pipeline (``ThroughPipeline``): the caller is the HTTP
bearer token's, authenticated by the edge, or HALOMEM_TOKEN's, re-checked on every stdio request;
the tools then call halomem.ops like every other transport. Tool arguments are closed: an extra argument such as
``namespace`` is refused before anything runs.
"""
from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any, Callable, Optional

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from pydantic import ConfigDict

from .. import __version__, audit
from ..auth.rights import Caller
from ..errors import HalomemError, InvalidInputError
from ..kernel import Kernel
from ..ops import Operations
from ..pipeline import Pipeline, Request
from .api import jsonable
from .edge import current

INSTRUCTIONS = (
    "halomem is your organization's governed memory. Use `search` before answering questions about "
    "the organization, `remember` to keep a durable fact, `supersede` when a fact changed (it keeps "
    "the history), `erase` only to delete content for good, and `history` to see how a fact changed. "
    "Your token fixes which namespace you read and write; you never name it."
)


_CURRENT: ContextVar[Request | None] = ContextVar("halomem_mcp_request", default=None)


class ThroughPipeline:
    """Every inbound MCP request through halomem.pipeline (SDK server middleware).

    Over HTTP the edge has already minted the id, authenticated and rate-limited the request, and
    writes its audit row when the response starts: this binds that same request to the tool call.
    Over stdio there is no edge: each JSON-RPC request becomes one pipeline request here,
    authenticated with HALOMEM_TOKEN anew (a revocation applies at once) and audited. A refusal is
    one readable line: an ``isError`` result for a tool call, a JSON-RPC error otherwise.
    Notifications pass untouched and are not audited.
    """

    def __init__(self, pipeline: Pipeline, stdio_token: str | None) -> None:
        self.pipeline = pipeline
        self.stdio_token = stdio_token

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.request_id is None:
            return await call_next(ctx)
        route = f"mcp {ctx.method}"
        if ctx.method == "tools/call" and isinstance((ctx.params or {}).get("name"), str):
            route += " " + ctx.params["name"][:50]
        held = current(ctx.request) if ctx.request is not None else None
        request = held or self.pipeline.begin(route, client="stdio")
        request.route = route
        if held is None:
            try:
                await anyio.to_thread.run_sync(self.pipeline.authenticate, request, self.stdio_token)
            except HalomemError as exc:
                await anyio.to_thread.run_sync(self.pipeline.finish, request, exc)
                return _refusal(ctx, exc)
        caller = request.caller
        token = _CURRENT.set(request)
        try:
            with audit.tracing(request), audit.acting_as(caller.principal_id if caller else None):
                result = await call_next(ctx)
            if isinstance(result, dict) and result.get("isError") and request.outcome is None:
                # refused before the tool ran (its arguments): the SDK's message, one line
                text = next((c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)), "")
                request.outcome = InvalidInputError((text.splitlines() or ["invalid arguments"])[0][:200])
        except Exception as exc:
            request.outcome = exc if isinstance(exc, HalomemError) else InvalidInputError(str(exc)[:200])
            raise
        finally:
            _CURRENT.reset(token)
            if held is None:
                await anyio.to_thread.run_sync(self.pipeline.finish, request, request.outcome)
        return result


def _refusal(ctx: Any, exc: HalomemError) -> Any:
    line = f"{exc.kind}: {(str(exc).splitlines() or [''])[0]}"
    if ctx.method == "tools/call":
        return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)
    raise MCPError(code=-32001, message=line)


def _caller() -> Caller:
    request = _CURRENT.get()
    if request is None or request.caller is None:
        raise ToolError("unauthenticated: this server needs Authorization: Bearer hm_...")
    return request.caller


def build_mcp(kernel: Kernel, pipeline: Pipeline, *, http: bool = False, stdio_token: str | None = None) -> MCPServer:
    mcp = MCPServer("halomem", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING",
                    middleware=[ThroughPipeline(pipeline, None if http else stdio_token)])

    async def call(work: Callable[[Operations], Any]) -> str:
        request = _CURRENT.get()
        ops = Operations(kernel, _caller(), request.request_id if request else None)
        try:
            result = await anyio.to_thread.run_sync(lambda: work(ops))
        except HalomemError as exc:
            if request is not None:
                request.outcome = exc
            raise ToolError(f"{exc.kind}: {(str(exc).splitlines() or [''])[0]}") from None
        return json.dumps(jsonable(result), ensure_ascii=False)

    @mcp.tool(description="Search the organization's memory visible to you. Returns ranked hits (content, "
                          "id, namespace, source, score) that together fit token_budget tokens.")
    async def search(query: str, k: int = 10, token_budget: int = 2000) -> str:
        return await call(lambda ops: ops.search(query, k=k, token_budget=token_budget).to_dict())

    @mcp.tool(description="Remember one durable fact in your namespace. Returns its id. Use supersede "
                          "instead when it replaces an existing memory.")
    async def remember(content: str, source: Optional[str] = None) -> str:
        return await call(lambda ops: ops.remember(content, source=source))

    @mcp.tool(description="Replace a memory whose fact changed: closes the old one's validity and links the "
                          "new one into its history. `id` must be the current head of its chain.")
    async def supersede(id: str, content: str) -> str:  # noqa: A002 - the argument the model sees
        return await call(lambda ops: {**jsonable(ops.supersede(id, content)), "supersedes": id})

    @mcp.tool(description="Erase a memory's content for good (e.g. a deletion request). A content-free "
                          "tombstone and an audit row with your reason are kept.")
    async def erase(id: str, reason: str = "") -> str:  # noqa: A002
        return await call(lambda ops: ops.erase(id, reason=reason).to_dict())

    @mcp.tool(description="The history of a memory: every version in its supersedence chain, oldest first, "
                          "with validity times.")
    async def history(id: str) -> str:  # noqa: A002
        return await call(lambda ops: {"chain": ops.history(id)})

    _close_arguments(mcp)
    return mcp


def _close_arguments(mcp: MCPServer) -> None:
    """Make every tool refuse arguments it does not declare (the SDK ignores them by default)."""
    for tool in mcp._tool_manager.list_tools():
        base = tool.fn_metadata.arg_model
        closed = type(base.__name__, (base,), {"model_config": ConfigDict(extra="forbid",
                                                                          arbitrary_types_allowed=True)})
        tool.fn_metadata.arg_model = closed
