"""The asynchronous client: the same operations (halomem_client.operations), awaited, over one
pooled httpx2.AsyncClient.

    from halomem_client import AsyncClient
    async with AsyncClient("http://127.0.0.1:8080", token) as hm:
        await hm.remember("Deploys go through ArgoCD canaries")
        result = await hm.search("how do we deploy")
"""
from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any, Callable, Sequence
from urllib.parse import quote

from .client import CONSISTENCY, DEFAULT_TIMEOUT, Reply, answer, headers_for, request_parts
from .errors import ServiceUnreachableError
from .operations import OPERATIONS, OWN_NAMESPACE, Call


class AsyncClient:
    def __init__(self, url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT, transport: Any = None) -> None:
        import httpx2

        self._httpx = httpx2
        self.url = url.rstrip("/")
        self.consistency: str | None = None
        self._namespace: str | None = None
        self._http = httpx2.AsyncClient(base_url=self.url, timeout=timeout, transport=transport,
                                        verify=not self.url.startswith("http://"), headers=headers_for(token))

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, *, json: Any = None, content: bytes | None = None,
                    params: Sequence[tuple[str, str]] = (), content_type: str | None = None,
                    text: bool = False) -> Any:
        path, content, headers = request_parts(path, json, content, params, content_type, self.consistency)
        try:
            response = await self._http.request(method, path, content=content, headers=headers)
        except self._httpx.TimeoutException:
            raise ServiceUnreachableError(f"halomem server at {self.url} did not answer in time") from None
        except self._httpx.HTTPError as exc:
            raise ServiceUnreachableError(f"cannot reach halomem server at {self.url}: {type(exc).__name__}") from None
        reply = Reply(response.status_code, response.content, response.headers.get(CONSISTENCY))
        if reply.consistency:
            self.consistency = reply.consistency
        return answer(self.url, reply, text)

    async def namespace(self) -> str:
        """The token's namespace (asked once)."""
        if self._namespace is None:
            self._namespace = (await self.whoami())["namespace"]
        return self._namespace

    async def _perform(self, call: Call) -> Any:
        if OWN_NAMESPACE in call.path:
            call = replace(call, path=call.path.replace(OWN_NAMESPACE, quote(await self.namespace(), safe="/")))
        return call.read(await self._call(call.method, call.path, json=call.json, content=call.content,
                                          params=call.params, content_type=call.content_type, text=call.text))


def _awaited(build: Callable[..., Call]) -> Callable[..., Any]:
    @functools.wraps(build)
    async def operation(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        return await self._perform(build(*args, **kwargs))

    return operation


for _operation in OPERATIONS:
    setattr(AsyncClient, _operation.name, _awaited(_operation.build))
