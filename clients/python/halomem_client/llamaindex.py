"""A LlamaIndex retriever over halomem: ``HalomemRetriever(url=..., token=...)`` is a
``llama_index.core.retrievers.BaseRetriever`` answering with ``NodeWithScore``s (sync and async).

    from halomem_client.llamaindex import HalomemRetriever
    retriever = HalomemRetriever(url="http://127.0.0.1:8080", token=token, k=5)
    nodes = retriever.retrieve("how do we deploy")

Each node's ``score`` is the hit's calibrated score; its ``metadata`` holds the same fields as the
LangChain retriever's (halomem_client.results.hit_metadata).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from .aio import AsyncClient
from .client import Client
from .results import SearchResult, hit_metadata


class HalomemRetriever(BaseRetriever):
    def __init__(self, *, url: str, token: str, k: int = 10, sources: Optional[Sequence[str]] = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.url, self.token, self.k = url, token, k
        self.sources = list(sources) if sources else None
        self._client = Client(url, token)

    def _nodes(self, result: SearchResult) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(id_=h.id or h.ref, text=h.content, metadata=hit_metadata(result, h),
                                            excluded_embed_metadata_keys=["provenance"],
                                            excluded_llm_metadata_keys=["provenance", "request_id"]),
                              score=h.score) for h in result.hits]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self._client.search(query_bundle.query_str, k=self.k, sources=self.sources))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        async with AsyncClient(self.url, self.token) as client:
            return self._nodes(await client.search(query_bundle.query_str, k=self.k, sources=self.sources))
