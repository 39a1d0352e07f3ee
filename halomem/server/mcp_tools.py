"""The MCP face: tools an agent's model calls, over streamable HTTP (`/mcp`) or stdio.

Each tool resolves its caller from the transport (the HTTP bearer token, verified on every request
by the SDK's token verifier, or `HALOMEM_TOKEN` re-checked on every stdio call), then calls
halomem.ops like every other transport. Tool arguments are closed: an extra argument such as
``namespace`` is refused before anything runs.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Optional

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ConfigDict

from ..auth.rights import Caller
from ..auth.store import PrincipalStore
from ..errors import AuthenticationError, HalomemError
from ..kernel import Kernel
from ..ops import Operations
from ..types import Namespace
from .api import jsonable, search_json

INSTRUCTIONS = (
    "halomem is your organization's governed memory. Use `search` before answering questions about "
    "the organization, `remember` to keep a durable fact, `supersede` when a fact changed (it keeps "
    "the history), `erase` only to delete content for good, and `history` to see how a fact changed. "
    "Your token fixes which namespace you read and write; you never name it."
)


class TokenVerifier:
    """The SDK's token verifier over halomem's principals (one lookup per HTTP request)."""

    def __init__(self, kernel: Kernel) -> None:
        self.store = PrincipalStore(kernel.engine)

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            p = await anyio.to_thread.run_sync(self.store.authenticate, token)
        except AuthenticationError:
            return None
        return AccessToken(token="-", client_id=p.id, scopes=list(p.scopes),
                           expires_at=int(p.expires_at.timestamp()) if p.expires_at else None,
                           claims={"namespace": p.namespace, "name": p.name})


def caller_from_http() -> Caller:
    access = get_access_token()
    if access is None or not access.claims:
        raise ToolError("unauthenticated: this server needs Authorization: Bearer hm_...")
    return Caller(Namespace(access.claims["namespace"]), frozenset(access.scopes), access.client_id,
                  access.claims.get("name", ""))


def build_mcp(kernel: Kernel, resolve_caller: Callable[[], Caller], **server_kwargs: Any) -> MCPServer:
    mcp = MCPServer("halomem", instructions=INSTRUCTIONS, log_level="WARNING", **server_kwargs)

    async def call(work: Callable[[Operations], Any]) -> str:
        caller = await anyio.to_thread.run_sync(resolve_caller)
        try:
            result = await anyio.to_thread.run_sync(lambda: work(Operations(kernel, caller)))
        except HalomemError as exc:
            raise ToolError(f"{exc.kind}: {(str(exc).splitlines() or [''])[0]}") from None
        return json.dumps(jsonable(result), ensure_ascii=False)

    @mcp.tool(description="Search the organization's memory visible to you. Returns ranked hits (content, "
                          "id, namespace, source, score) that together fit token_budget tokens.")
    async def search(query: str, k: int = 10, token_budget: int = 2000) -> str:
        return await call(lambda ops: search_json(ops.search(query, k=k, token_budget=token_budget)))

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
    async def erase(id: str, reason: str) -> str:  # noqa: A002
        return await call(lambda ops: {"erased": id, "request_id": ops.erase(id, reason=reason)})

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
