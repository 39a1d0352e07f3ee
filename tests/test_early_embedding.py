"""A search embeds its query on a worker while it reads the policy and the lexical lane (embed.early):
once per search, with the store's embedder, and an embedder's failure stays the kernel's."""
from __future__ import annotations

import threading

import pytest

from halomem.drivers.view import build_scoped_view
from halomem.embed.early import EarlyQuery, worth_a_worker
from halomem.embed.embedders import HashEmbedder
from halomem.errors import DriverError, EmbedderUnavailableError
from halomem.index import Scope
from halomem.types import Namespace, ScoredRef

QUERY = "when does the build server run?"


class Recording:
    """The kernel's own embedder, as an embedding service would be (worth a worker): records each
    text and the thread that embedded it, or fails like a service that is down."""

    kind = "openai"

    def __init__(self, inner, failing: bool = False) -> None:  # noqa: ANN001
        self._inner, self.failing = inner, failing
        self.calls: list[tuple[str, str]] = []

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._inner, name)

    def embed(self, texts):  # noqa: ANN001, ANN201
        self.calls += [(t, threading.current_thread().name) for t in texts]
        if self.failing:
            raise EmbedderUnavailableError("embedding service http://127.0.0.1:1 unreachable")
        return self._inner.embed(texts)


class LexicalOnFailure:
    """A driver that swallows the embedder's failure and answers from its lexical lane."""

    name = "lexical-on-failure"

    def plan(self, q):  # noqa: ANN001, ANN201
        found = q.view.lexical_candidates(q.query, 10)
        try:
            q.view.embed([q.query])
        except Exception:  # noqa: BLE001 - what this driver is for
            pass
        return [ScoredRef(c.ref, "L2", c.ref, 1.0, c.content, 1) for c in found]


@pytest.fixture()
def recording(kernel):  # noqa: ANN001, ANN201
    original = kernel.embedders.current
    kernel.remember("acme/eng", "The build server runs nightly at two in the morning.")
    kernel.remember("acme/eng", "Maria's favourite fruit is the mango.")
    kernel.embedders.current = Recording(original)
    try:
        yield kernel.embedders.current
    finally:
        kernel.embedders.current = original
        if kernel.registry.has(LexicalOnFailure.name):
            kernel.registry.unmount(LexicalOnFailure.name)


def test_a_search_embeds_its_query_once_on_a_worker(kernel, recording) -> None:  # noqa: ANN001
    result = kernel.search(Namespace("acme/eng"), QUERY)
    assert "build server" in result.hits[0].content
    # the driver's vector lane, its concepts and the kernel's relevance features: one embedding
    assert [text for text, _ in recording.calls] == [QUERY]
    assert recording.calls[0][1].startswith("halomem-query-embed")  # not the caller's thread


@pytest.mark.parametrize("driver", ["fusion", "baseline", LexicalOnFailure.name])
def test_an_embedder_that_fails_under_the_driver_fails_the_search_as_the_kernel_s(kernel, recording,  # noqa: ANN001
                                                                                   driver: str) -> None:
    """The driver meets the failure while it plans (the embedding overlaps its lexical reads): the
    caller gets the embedder's error (503 embedder-unavailable), never a driver error, and nothing is
    served from a plan the kernel could not score, even when the driver swallowed the failure."""
    kernel.registry.mount(LexicalOnFailure())
    recording.failing = True
    with pytest.raises(EmbedderUnavailableError) as caught:
        kernel.search(Namespace("acme/eng"), "build server", driver=driver)
    assert not isinstance(caught.value, DriverError)
    recording.failing = False
    assert kernel.search(Namespace("acme/eng"), "build server", driver=driver).hits


def test_an_early_embedding_by_another_embedder_is_not_used(kernel) -> None:  # noqa: ANN001
    """A reembed swapped the store's embedder after the search began: the view embeds again with the
    one the snapshot names instead of handing the driver a vector of another space."""
    kernel.remember("acme/eng", "The build server runs nightly.")
    before, now = HashEmbedder(256), HashEmbedder(64)
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace("acme/eng")), now, EarlyQuery(before, QUERY))
        [vector] = view.embed([QUERY])
    assert vector == now.embed([QUERY])[0] and len(vector) == 64


def test_an_early_embedding_raises_the_embedder_s_own_error_where_it_is_asked_for() -> None:
    failing = Recording(HashEmbedder(), failing=True)
    early = EarlyQuery(failing, QUERY)  # started now, on a worker
    with pytest.raises(EmbedderUnavailableError):
        early.vector()
    assert [name for _, name in failing.calls] == [failing.calls[0][1]]
    assert failing.calls[0][1].startswith("halomem-query-embed")


def test_a_transformer_is_given_a_worker_only_when_it_leaves_the_reads_a_core() -> None:
    """On every core it would take them from the statements it overlaps (no gain measured on 2
    cores); on all but one (`halomem serve`'s setting) it runs beside them."""
    import os

    from halomem.embed.onnx import OnnxEmbedder

    cores = os.cpu_count() or 1
    assert worth_a_worker(OnnxEmbedder(threads=max(1, cores - 1))) == (cores > 1)
    assert not worth_a_worker(OnnxEmbedder(threads=cores))
    assert not worth_a_worker(HashEmbedder())  # microseconds: the hop would cost more
    assert worth_a_worker(Recording(HashEmbedder()))  # a service waits on the network


def test_a_forked_child_embeds_early_with_workers_of_its_own() -> None:
    """The CLI forks (embed.prefetch); a child that inherited the parent's pool, whose threads it does
    not have, would wait forever for its query's embedding."""
    import os

    EarlyQuery(Recording(HashEmbedder()), "warm the parent's pool").vector()
    pid = os.fork()
    if pid == 0:  # the child: embed early once, report by exit code, never run the parent's hooks
        code = 1
        try:
            done = threading.Event()

            def embed() -> None:
                EarlyQuery(Recording(HashEmbedder()), QUERY).vector()
                done.set()
            threading.Thread(target=embed, daemon=True).start()
            code = 0 if done.wait(10) else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
