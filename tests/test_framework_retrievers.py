"""The released LangChain and LlamaIndex packages against a live server: each retriever is its
framework's BaseRetriever, answers with the framework's types carrying the calibrated score, id and
provenance, sync and async, and sees only what its token may."""
from __future__ import annotations

import asyncio

from tests.conftest import make_token


def _seed(kernel) -> None:  # noqa: ANN001
    kernel.remember("acme/eng", "Deploys go through ArgoCD canaries", source="runbook", provenance={"page": 3})
    kernel.remember("acme/eng", "The office plants are watered on Fridays")
    kernel.remember("acme/sales", "Deploys of the CRM are done by the vendor")  # a sibling: never returned


def test_the_langchain_retriever(api_server, kernel):
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from halomem_client.langchain import HalomemRetriever

    _seed(kernel)
    retriever = HalomemRetriever(url=api_server.url, token=make_token(kernel, "acme/eng", "read"), k=3)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("how do we deploy")
    assert docs and all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert top.page_content == "Deploys go through ArgoCD canaries" and top.id == top.metadata["id"]
    assert 0 < top.metadata["score"] <= 1 and top.metadata["namespace"] == "acme/eng"
    assert top.metadata["source"] == "runbook" and top.metadata["provenance"]["page"] == 3
    assert top.metadata["request_id"]
    assert all("CRM" not in d.page_content for d in docs)
    again = asyncio.run(retriever.ainvoke("how do we deploy"))
    assert [d.id for d in again] == [d.id for d in docs]
    scoped = HalomemRetriever(url=api_server.url, token=make_token(kernel, "acme/eng", "read"), sources=["runbook"])
    assert [d.metadata["source"] for d in scoped.invoke("deploys and plants")] == ["runbook"]


def test_the_llamaindex_retriever(api_server, kernel):
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore

    from halomem_client.llamaindex import HalomemRetriever

    _seed(kernel)
    retriever = HalomemRetriever(url=api_server.url, token=make_token(kernel, "acme/eng", "read"), k=3)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve("how do we deploy")
    assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
    top = nodes[0]
    assert top.node.get_content() == "Deploys go through ArgoCD canaries" and top.node.node_id == top.node.metadata["id"]
    assert top.score == top.node.metadata["score"] and 0 < top.score <= 1
    assert top.node.metadata["provenance"]["page"] == 3 and top.node.metadata["namespace"] == "acme/eng"
    assert all("CRM" not in n.node.get_content() for n in nodes)
    again = asyncio.run(retriever.aretrieve("how do we deploy"))
    assert [n.node.node_id for n in again] == [n.node.node_id for n in nodes]
