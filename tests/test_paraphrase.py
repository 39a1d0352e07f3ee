"""Meaning by default: a fresh store (default embedder, the namespace's default driver) finds company
facts asked in other words, and a query about nothing in the store gets no hits."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from halomem.bench.harness import ephemeral_kernel

FACTS = [json.loads(line) for line in
         (Path(__file__).parent.parent / "halomem" / "fixtures" / "paraphrase" / "facts.jsonl").read_text().splitlines()]
NOTHING = ["zebra giraffe", "zxqvbnm", "the weather in Paris", "lorem ipsum dolor sit amet",
           "a recipe for banana bread", "who won the football match yesterday"]


@pytest.fixture(scope="module")
def store():
    with ephemeral_kernel(None) as kernel:  # what `halomem init` makes: the default embedder
        ids = [kernel.remember("acme/eng", f["fact"]).id for f in FACTS]
        yield kernel, ids


def test_the_store_uses_the_default_embedder(store) -> None:
    kernel, _ = store
    assert kernel.embedder.name == "onnx:minilm-l6-v2"


def test_paraphrases_are_found_first(store) -> None:
    kernel, ids = store
    assert len(FACTS) >= 20
    firsts = []
    for fact, memory_id in zip(FACTS, ids):
        result = kernel.search("acme/eng", fact["question"], k=5)  # the namespace's default driver
        firsts.append(bool(result.hits) and result.hits[0].ref == memory_id)
    missed = [f["question"] for f, ok in zip(FACTS, firsts) if not ok]
    # the bar: >= 18 of >= 20 facts. 19 of these 24 today: the five misses are all-MiniLM-L6-v2's own
    # (its vectors alone miss the same five), none the fusion's
    assert sum(firsts) >= 18, missed


@pytest.mark.parametrize("query", NOTHING)
def test_a_query_about_nothing_in_the_store_gets_no_hits(store, query: str) -> None:
    kernel, _ = store
    assert kernel.search("acme/eng", query, k=5).hits == []
