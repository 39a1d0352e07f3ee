"""A LangChain retriever over halomem: ``HalomemRetriever(url=..., token=...)`` is a
``langchain_core.retrievers.BaseRetriever`` answering with ``Document``s (sync and async).

    from halomem_client.langchain import HalomemRetriever
    retriever = HalomemRetriever(url="http://127.0.0.1:8080", token=token, k=5)
    docs = retriever.invoke("how do we deploy")

Each document's ``metadata`` holds the hit's calibrated ``score`` (the chance it is relevant),
``id``, ``ref``, ``namespace``, ``source``, ``valid_from``, ``provenance`` and the search's
``request_id`` (what feedback names). The token decides what the retriever may see.
"""
from __future__ import annotations

from typing import Optional

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr

from .aio import AsyncClient
from .client import Client
from .results import SearchResult, hit_metadata


class HalomemRetriever(BaseRetriever):
    url: str
    token: str
    k: int = 10
    sources: Optional[list[str]] = None  # only memories from these sources
    model_config = ConfigDict(arbitrary_types_allowed=True)
    _client: Optional[Client] = PrivateAttr(default=None)

    def _documents(self, result: SearchResult) -> list[Document]:
        return [Document(page_content=h.content, metadata=hit_metadata(result, h), id=h.id or h.ref)
                for h in result.hits]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if self._client is None:
            self._client = Client(self.url, self.token)
        return self._documents(self._client.search(query, k=self.k, sources=self.sources))

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun) -> list[Document]:
        async with AsyncClient(self.url, self.token) as client:
            return self._documents(await client.search(query, k=self.k, sources=self.sources))
