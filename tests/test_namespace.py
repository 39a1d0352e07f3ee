import pytest

from halomem.types import InvalidNamespace, Namespace, estimate_tokens, namespace_problem


@pytest.mark.parametrize("good", ["acme", "acme/eng", "acme/eng/infra", "a-b_c.d/x1", "A/" * 15 + "z"])
def test_valid_namespaces(good):
    assert Namespace(good).path == good


@pytest.mark.parametrize("bad", ["", "/acme", "acme/", "acme//eng", "acme/../x", "acme/./x", "ac me",
                                 "acme/eng;drop", "a\x00b", "x" * 256, "a/" * 16 + "b", "ünïcode",
                                 "acme/" + "y" * 65])
def test_invalid_namespaces(bad):
    assert namespace_problem(bad)
    with pytest.raises(InvalidNamespace):
        Namespace(bad)


def test_lineage_is_root_first_and_stops_at_self():
    assert Namespace("acme/eng/infra").lineage() == ["acme", "acme/eng", "acme/eng/infra"]


def test_estimate_tokens_is_ceil_len_over_4():
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
