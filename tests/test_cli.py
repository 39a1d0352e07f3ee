"""The CLI as shell scripts use it: JSON on stdout, one stderr line and a documented code on error."""
import json

import pytest

from tests.conftest import count


def _one_line_error(proc, code):
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("halomem: "), proc.stderr


def test_remember_search_history_json(cli):
    made = json.loads(cli("remember", "--ns", "acme/eng", "--source", "wiki", "--json",
                          "the kiln temperature is 1200 C").stdout)
    newer = json.loads(cli("supersede", "--ns", "acme/eng", "--json", made["id"], "the kiln runs at 1250 C").stdout)
    found = json.loads(cli("search", "--ns", "acme/eng", "--json", "kiln temperature").stdout)
    assert [h["ref"] for h in found["hits"]] == [newer["id"]] and found["driver"] == "fusion"
    assert found["hits"][0]["source"] == "wiki" and found["tokens"] == found["hits"][0]["token_estimate"]
    chain = json.loads(cli("history", "--ns", "acme/eng", "--json", newer["id"]).stdout)
    assert [r["id"] for r in chain] == [made["id"], newer["id"]]
    table = cli("search", "--ns", "acme/eng", "kiln")
    assert table.returncode == 0 and newer["id"] in table.stdout


def test_ns_from_environment(cli):
    assert cli("remember", "env ns fact", env={"HALOMEM_NS": "acme"}).returncode == 0
    assert json.loads(cli("search", "--json", "env ns fact", env={"HALOMEM_NS": "acme/x"}).stdout)["hits"]


@pytest.fixture()
def seeded(kernel):
    kernel.remember("acme", "a fact that must survive every bad input")
    kernel.set_policy("acme", {"retriever": "keyword"})

    def snapshot():
        return (count(kernel, "SELECT count(*) FROM memories"),
                count(kernel, "SELECT count(*) FROM policies"),
                kernel.effective_policy("acme").retriever, kernel.audit_verify().ok)

    return snapshot


@pytest.mark.parametrize("args,code", [
    (["search", "--ns", "acme//eng", "q"], 3),
    (["search", "--ns", "/acme", "q"], 3),
    (["search", "--ns", "acme; DROP TABLE memories", "q"], 3),
    (["search", "--ns", "acme", ""], 3),
    (["search", "--ns", "acme", "   "], 3),
    (["search", "--ns", "acme", "x" * 5000], 3),
    (["search", "--ns", "acme", "binary\x01\x02\x7f"], 3),
    (["search", "--ns", "acme", "--k", "0", "q"], 3),
    (["search", "--ns", "acme", "--driver", "nope", "q"], 3),
    (["search", "q"], 3),
    (["remember", "--ns", "acme", "--provenance", "{bad", "x"], 3),
    (["supersede", "--ns", "acme", "m_missing", "x"], 4),
    (["erase", "--ns", "acme", "m_missing"], 4),
    (["policy", "set", "--ns", "acme", "--retriever", "has space"], 3),
    (["policy", "set", "--ns", "acme", "--ab-a", "baseline", "--pct-b", "20"], 3),
    (["concept", "put", "--ns", "acme", "../etc/passwd", "x"], 3),
])
def test_bad_input_one_line_and_code_and_data_unchanged(cli, seeded, args, code):
    before = seeded()
    _one_line_error(cli(*args), code)
    assert seeded() == before


def test_unicode_and_injection_strings_are_just_text(cli, seeded):
    evil = "'; DROP TABLE memories; -- \u00e9\u4e2d\U0001F600 ) OR 1=1 --"
    made = json.loads(cli("remember", "--ns", "acme", "--source", evil, "--json", evil).stdout)
    hits = json.loads(cli("search", "--ns", "acme", "--json", evil).stdout)["hits"]
    assert any(h["ref"] == made["id"] and h["content"] == evil and h["source"] == evil for h in hits)
    assert json.loads(cli("search", "--ns", "acme", "--json", "\u4e2d\u6587 \U0001F600").stdout)["driver"] == "keyword"


def test_invalid_policy_yaml_and_corrupt_ingest(cli, seeded, tmp_path):
    before = seeded()
    bad_yaml = tmp_path / "p.yaml"
    bad_yaml.write_text("acme: {retriever: [unclosed\n")
    _one_line_error(cli("policy", "import", str(bad_yaml)), 3)
    half_bad = tmp_path / "p2.yaml"
    half_bad.write_text("acme/eng: {retriever: graph}\nacme/sales: {ab_test: {a: x}}\n")
    _one_line_error(cli("policy", "import", str(half_bad)), 3)
    corrupt = tmp_path / "c.jsonl"
    corrupt.write_bytes(b'{"content": "ok"}\n\x89PNG\r\n\x1a\n')
    proc = cli("ingest", "--ns", "acme", str(corrupt))
    _one_line_error(proc, 11)
    assert "c.jsonl:2" in proc.stderr
    _one_line_error(cli("ingest", "--ns", "acme", str(tmp_path / "missing.jsonl")), 11)
    assert seeded() == before


def test_policy_yaml_round_trip(cli, kernel, tmp_path):
    assert cli("policy", "set", "--ns", "acme/eng", "--ab-a", "baseline", "--ab-b", "graph", "--pct-b", "25").returncode == 0
    exported = cli("policy", "export").stdout
    assert "pct_b: 25" in exported
    kernel.clear_policy("acme/eng")
    f = tmp_path / "policies.yaml"
    f.write_text(exported)
    assert cli("policy", "import", str(f)).returncode == 0
    assert json.loads(cli("policy", "show", "--ns", "acme/eng/x", "--json").stdout) == {
        "ab_test": {"a": "baseline", "b": "graph", "pct_b": 25}, "from": "acme/eng", "namespace": "acme/eng/x",
        "consolidate": "report", "ttl": "never", "llm_tokens_per_day": None,
        "origins": {"routing": "acme/eng", "consolidate": "default", "ttl": "default", "llm_tokens_per_day": "default"}}


def test_drivers_list_and_debug_traceback(cli):
    rows = json.loads(cli("drivers", "list", "--json").stdout)  # and whatever cartridges this machine has
    shipped = {r["name"]: r["graph"] for r in rows if r["origin"] == "in-process"}
    assert shipped == {"baseline": False, "fusion": False, "graph": True, "keyword": False}
    proc = cli("search", "--ns", "a//b", "q", env={"HALOMEM_DEBUG": "1"})
    assert proc.returncode == 3 and "Traceback" in proc.stderr
