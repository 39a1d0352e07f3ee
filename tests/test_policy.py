import pytest

from halomem.errors import InvalidInputError
from halomem.policy import ABTest, choose_driver, fnv1a32, parse_policy


@pytest.mark.parametrize("text,expected", [
    ("", 0x811C9DC5), ("a", 0xE40C292C), ("foobar", 0xBF9CF968), ("hello", 0x4F9F2CAB),
])
def test_fnv1a32_known_vectors(text, expected):
    assert fnv1a32(text) == expected


def test_ab_split_is_deterministic_and_proportional():
    t = ABTest("baseline", "keyword", 25)
    queries = [f"query number {i}" for i in range(4000)]
    arms = [t.arm(q) for q in queries]
    assert arms == [t.arm(q) for q in queries]
    share_b = arms.count("keyword") / len(arms)
    assert 0.22 < share_b < 0.28
    assert {ABTest("a", "b", 0).arm(q) for q in queries} == {"a"}
    assert {ABTest("a", "b", 100).arm(q) for q in queries} == {"b"}


@pytest.mark.parametrize("bad", [None, [], {}, {"retriever": ""}, {"retriever": "x y"},
                                 {"retriever": "a", "ab_test": {}}, {"ab_test": {"a": "x", "b": "y"}},
                                 {"ab_test": {"a": "x", "b": "y", "pct_b": 101}},
                                 {"ab_test": {"a": "x", "b": "y", "pct_b": "25"}}, {"retreiver": "baseline"}])
def test_invalid_policies(bad):
    with pytest.raises(InvalidInputError):
        parse_policy(bad)


def test_seed_yaml_spelling_accepted():
    p = parse_policy({"abTest": {"a": "baseline", "b": "keyword", "pctB": 25}})
    assert p.ab_test == ABTest("baseline", "keyword", 25)


def test_nearest_ancestor_policy_wins(kernel):
    kernel.set_policy("acme", {"retriever": "keyword"})
    kernel.set_policy("acme/eng", {"retriever": "graph"})
    assert kernel.effective_policy("acme/eng/infra").retriever == "graph"
    assert kernel.effective_policy("acme/eng/infra").namespace == "acme/eng"
    assert kernel.effective_policy("acme/sales").retriever == "keyword"
    assert kernel.effective_policy("globex").retriever == "fusion"  # the default policy
    kernel.clear_policy("acme/eng")
    assert kernel.effective_policy("acme/eng/infra").retriever == "keyword"


def test_search_routes_by_policy_and_ab_arm(kernel):
    kernel.remember("acme", "routing fact about widgets")
    kernel.set_policy("acme", {"ab_test": {"a": "baseline", "b": "keyword", "pct_b": 50}})
    for q in ("widgets", "routing widgets", "fact about widgets", "widget routing fact"):
        expected = choose_driver(kernel.effective_policy("acme"), q)
        assert kernel.search("acme", q).driver == expected
        assert kernel.audit_tail(1)[0].fields["driver"] == expected
