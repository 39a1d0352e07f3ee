"""A hit that matched nothing (no query term, cosine under the embedder's similarity floor) is not
returned to fill k, by any shipped driver; scores stay within 0..1."""
from __future__ import annotations

import pytest

from halomem.embed import get_embedder
from halomem.embed.calibrate import UNRELATED, noise_floor

DRIVERS = ["baseline", "fusion", "graph", "keyword"]
MEMORIES = ["Deploys go through ArgoCD canaries.", "Maria leads the payments squad.",
            "Logs are kept for thirty days in Loki.", "Quarterly planning starts in March."]


@pytest.mark.parametrize("driver", DRIVERS)
def test_no_padding_with_rows_that_matched_nothing(kernel, driver: str) -> None:
    for text in MEMORIES:
        kernel.remember("acme/eng", text)
    one = kernel.search("acme/eng", "payments", driver=driver, k=10)
    assert [h.content for h in one.hits] == ["Maria leads the payments squad."]
    assert kernel.search("acme/eng", "zebra giraffe", driver=driver, k=10).hits == []
    many = kernel.search("acme/eng", "payments canaries planning", driver=driver, k=10)
    assert len(many.hits) == 3 and all(0.0 <= h.score <= 1.0 for h in many.hits)


@pytest.mark.parametrize("spec", ["hash", "static"])
def test_the_floor_sits_between_unrelated_and_related_texts(spec: str) -> None:
    embedder = get_embedder(spec)
    floor = noise_floor(embedder)
    assert noise_floor(embedder) == floor  # computed once, the same for every caller
    related = embedder.embed(["Who repaired the bicycle?", UNRELATED[-1]])
    assert sum(a * b for a, b in zip(*related)) > floor


def test_a_paraphrase_clears_the_floor_with_the_default_embedder() -> None:
    embedder = get_embedder("static")
    memory, question = embedder.embed(["On-call rotation for the platform team is weekly.",
                                       "who is woken up at night when production breaks"])
    assert sum(a * b for a, b in zip(memory, question)) >= noise_floor(embedder)
