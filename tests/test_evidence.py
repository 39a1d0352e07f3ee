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


SIBLING = ["The Q3 sales pipeline is worth four million euros.", "Globex renewed its contract for two years.",
           "The EMEA sales kickoff is in Lisbon this year."]
NOTHING_HERE = ("flibbertigibbet wombat quux", "the of and is what", "who is it")  # nonsense, stop words alone
SIBLINGS_TOPICS = ("where is the sales kickoff", "did Globex renew the contract", "how long did Globex sign for",
                   "which city hosts the EMEA kickoff")


@pytest.mark.parametrize("driver", DRIVERS)
def test_nonsense_and_stop_words_alone_get_no_hits(kernel, driver: str) -> None:
    for text in MEMORIES:
        kernel.remember("acme/eng", text)
    for query in NOTHING_HERE:
        assert kernel.search("acme/eng", query, driver=driver, k=10).hits == [], (driver, query)


def test_a_topic_only_a_sibling_holds_gets_no_hits_with_the_default_embedder(tmp_path) -> None:
    """Round 2 of the attack: what only acme/sales holds, asked from acme/eng, and nonsense, answer
    nothing from any shipped driver (keyword padded with rows that shared "the" and "is"), while
    acme/sales itself finds its row."""
    from halomem.bench.harness import ephemeral_kernel

    with ephemeral_kernel("default") as kernel:
        for text in MEMORIES:
            kernel.remember("acme/eng", text)
        for text in SIBLING:
            kernel.remember("acme/sales", text)
        for driver in DRIVERS:
            for query in (*SIBLINGS_TOPICS, *NOTHING_HERE):
                assert kernel.search("acme/eng", query, driver=driver, k=10).hits == [], (driver, query)
            found = kernel.search("acme/sales", "did Globex renew the contract", driver=driver).hits
            assert found and found[0].content == "Globex renewed its contract for two years.", driver
