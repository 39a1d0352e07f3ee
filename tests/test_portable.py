"""Export and import (halomem.portable) on the real CLI: export, import into another store (another
embedder re-embeds), export again gives the same file; chains, validity times, keys, tombstones,
entities, concepts and policies travel; as-of and subtree exports; a second import writes nothing,
a differing record refuses the whole import, and a file that is not an export is one line, exit 3."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def _seed(kernel) -> dict:  # noqa: ANN001
    first = kernel.remember("acme/eng", "Staging is rebuilt every Sunday night", source="runbook",
                            provenance={"page": 2})
    head = kernel.supersede("acme/eng", first.id, "Staging is rebuilt every Saturday night")
    kernel.ingest_bytes("acme/eng", b'{"content": "Priya is on call", "key": "oncall"}\n', fmt="jsonl")
    kernel.ingest_bytes("acme/eng", b'{"content": "Marco is on call", "key": "oncall"}\n', fmt="jsonl")  # supersedes
    gone = kernel.remember("acme/eng", "A note that was erased")
    kernel.erase("acme/eng", gone.id, reason="test")
    kernel.remember("acme/eng/infra", "The pager rotates on Mondays")
    kernel.remember("acme/sales", "The sales target is secret")
    kernel.add_entity("acme/eng", "Marco", ["M."])
    kernel.put_concept("acme/eng", "deploys/pipeline", "ArgoCD canaries, then Flux")
    kernel.set_policy("acme/eng", {"retriever": "keyword", "ttl": "90d"})
    return {"chain": [first.id, head.id], "erased": gone.id}


def _records(path) -> list[dict]:  # noqa: ANN001
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_export_import_export_is_the_same_file_and_everything_travels(kernel, cli, tmp_path):
    seeded = _seed(kernel)
    one = tmp_path / "one.jsonl"
    made = cli("export", "--ns", "acme/eng", "--out", str(one))
    assert made.returncode == 0, made.stderr
    records = _records(one)
    assert records[0]["kind"] == "header" and records[0]["namespace"] == "acme/eng"
    memories = [r for r in records if r["kind"] == "memory"]
    assert {r["namespace"] for r in memories} == {"acme/eng"}  # never a sibling's, nor (without --subtree) below
    assert [r["id"] for r in memories if r["id"] in seeded["chain"]] == seeded["chain"]
    tomb = next(r for r in memories if r["id"] == seeded["erased"])
    assert tomb["content"] == "" and tomb["erased_at"]
    assert {r["kind"] for r in records} == {"header", "memory", "entity", "concept", "policy"}
    assert "secret" not in one.read_text()

    with kernel.engine.begin() as conn:  # the same store emptied: an import puts it all back
        conn.exec_driver_sql("TRUNCATE memories, entities, entity_aliases, concepts, policies, lexicon,"
                             " lexicon_events CASCADE")
    loaded = cli("import", str(one), "--json")
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout) == {"memories": len(memories), "unchanged": 0, "entities": 1, "concepts": 1,
                                         "policies": 1}
    two = tmp_path / "two.jsonl"
    assert cli("export", "--ns", "acme/eng", "--out", str(two)).returncode == 0
    assert two.read_text() == one.read_text()
    assert [r.id for r in kernel.history("acme/eng", seeded["chain"][1])] == seeded["chain"]
    assert kernel.search("acme/eng", "when is staging rebuilt").hits[0].id == seeded["chain"][1]
    assert kernel.effective_policy("acme/eng").ttl == "90d"
    again = cli("import", str(one), "--json")
    assert json.loads(again.stdout)["memories"] == 0 and json.loads(again.stdout)["unchanged"] == len(memories)
    assert kernel.audit_verify().ok


def test_as_of_and_subtree_exports(kernel, cli, tmp_path):
    from datetime import datetime, timezone

    first = kernel.remember("acme/eng", "The VPN gateway is vpn1")
    then = datetime.now(timezone.utc).isoformat()
    kernel.supersede("acme/eng", first.id, "The VPN gateway is vpn2")
    kernel.remember("acme/eng/infra", "The pager rotates on Mondays")
    past = tmp_path / "past.jsonl"
    assert cli("export", "--ns", "acme/eng", "--as-of", then, "--out", str(past)).returncode == 0
    assert [r["content"] for r in _records(past) if r["kind"] == "memory"] == ["The VPN gateway is vpn1"]
    tree = tmp_path / "tree.jsonl"
    assert cli("export", "--ns", "acme/eng", "--subtree", "--out", str(tree)).returncode == 0
    assert {r["namespace"] for r in _records(tree) if r["kind"] == "memory"} == {"acme/eng", "acme/eng/infra"}


def test_a_differing_record_refuses_the_whole_import_and_bad_files_are_one_line(kernel, cli, tmp_path):
    made = kernel.remember("acme/eng", "The VPN gateway is vpn1")
    path = tmp_path / "export.jsonl"
    assert cli("export", "--ns", "acme/eng", "--out", str(path)).returncode == 0
    records = _records(path)
    for r in records:
        if r.get("id") == made.id:
            r["content"] = "The VPN gateway is vpn9"
    records.append({"kind": "memory", "id": "m_new0000000000000000", "namespace": "acme/eng", "content": "new",
                    "t_valid_from": records[1]["t_valid_from"]})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    before = kernel.audit_tail(1)[-1].seq
    refused = cli("import", str(path))
    assert refused.returncode == 5 and "differs" in refused.stderr and refused.stderr.count("\n") == 1
    assert [m.id for m in kernel.recent("acme/eng", 10).memories] == [made.id]  # nothing of it was written
    assert kernel.search("acme/eng", "vpn9").hits == []
    outside = tmp_path / "outside.jsonl"
    header = {"kind": "header", "format": "halomem-export/1", "namespace": "acme/eng", "subtree": False}
    outside.write_text(json.dumps(header) + "\n" + json.dumps({"kind": "memory", "id": "m_x", "namespace": "acme/sales",
                                                               "content": "smuggled", "t_valid_from": "2026-01-01T00:00:00+00:00"}) + "\n")
    smuggled = cli("import", str(outside))
    assert smuggled.returncode == 3 and "outside the export" in smuggled.stderr
    for body in (b"", b"garbage\n", b"\xff\xfe\x00binary", b'{"kind": "memory"}\n'):
        bad = tmp_path / "bad.jsonl"
        bad.write_bytes(body)
        run = cli("import", str(bad))
        assert run.returncode == 3 and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, (body, run.stderr)
    from halomem.errors import IngestError

    missing = cli("import", str(tmp_path / "missing.jsonl"))
    assert missing.returncode == IngestError.exit_code and "cannot read" in missing.stderr
    assert all(r.action != "import" or r.fields["outcome"] != "ok" for r in kernel.audit_tail(50) if r.seq > before)


@pytest.mark.skipif(bool(os.environ.get("HALOMEM_DATABASE_URL")), reason="a second embedded data dir")
def test_import_into_a_store_with_another_embedder_reembeds(kernel, cli, cli_env, tmp_path):
    kernel.remember("acme/eng", "Deploys go through ArgoCD canaries")
    path = tmp_path / "export.jsonl"
    assert cli("export", "--ns", "acme/eng", "--out", str(path)).returncode == 0
    other = {**cli_env, "HALOMEM_HOME": str(tmp_path / "other"), "HALOMEM_EMBEDDER": "static"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "halomem.cli.main", *args], env=other, capture_output=True,
                              text=True, timeout=300)

    try:
        assert run("import", str(path)).returncode == 0
        found = json.loads(run("search", "--ns", "acme/eng", "how do we deploy", "--json").stdout)
        assert found["hits"][0]["content"] == "Deploys go through ArgoCD canaries"
        again = tmp_path / "again.jsonl"
        assert run("export", "--ns", "acme/eng", "--out", str(again)).returncode == 0
        assert again.read_text() == path.read_text()
    finally:
        run("db", "stop", "--force")


def test_no_hostile_export_file_gets_past_a_clear_refusal(kernel):
    """Generated records with every field of every kind: the import answers or refuses with the
    kernel's own error classes (invalid input, conflict), never anything else; a refused one leaves
    the store as it was."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from halomem.errors import ConflictError, InvalidInputError

    kernel.remember("acme/eng", "A memory that stays")
    value = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.text(max_size=30),
                      st.sampled_from(["2026-01-01T00:00:00+00:00", "2026-13-01", "m_x", "acme/eng", "acme/sales", "",
                                       "\x00", "L3"]), st.lists(st.text(max_size=5), max_size=3),
                      st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))
    memory = st.fixed_dictionaries({"kind": st.just("memory"), "id": value, "namespace": value, "content": value,
                                    "t_valid_from": value},
                                   optional={"t_valid_to": value, "erased_at": value, "source": value,
                                             "position": value, "provenance": value, "key": value, "tier": value,
                                             "supersedes": value, "superseded_by": value})
    other = st.fixed_dictionaries({"kind": st.sampled_from(["entity", "concept", "policy", "nonsense"]),
                                   "namespace": value}, optional={"name": value, "aliases": value, "path": value,
                                                                  "content": value, "policy": value})
    header = {"kind": "header", "format": "halomem-export/1", "namespace": "acme/eng", "subtree": False}
    before = [m.id for m in kernel.recent("acme/eng", 50).memories]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.one_of(memory, other), min_size=1, max_size=4))
    def check(items):
        lines = [json.dumps(header)] + [json.dumps(i) for i in items]
        try:
            kernel.import_lines(lines)
        except (InvalidInputError, ConflictError):
            assert [m.id for m in kernel.recent("acme/eng", 50).memories] == before

    check()


def test_export_and_import_over_rest_for_an_admin_of_that_namespace_alone(api_server, kernel):
    """An admin exports and imports its own namespace through the client; a read-write token is
    refused; an export of another namespace (or of a subtree) is refused before anything is written."""
    from halomem_client import Client, PermissionDeniedError

    from tests.conftest import make_token

    kernel.remember("acme/eng", "Deploys go through ArgoCD canaries")
    kernel.remember("acme/eng/infra", "The pager rotates on Mondays")  # a descendant: not the admin's to read
    with Client(api_server.url, make_token(kernel, "acme/eng", "read,write,admin")) as admin:
        text = admin.export_namespace()
        lines = text.splitlines()
        assert json.loads(lines[0])["namespace"] == "acme/eng" and "pager" not in text
        assert admin.import_namespace(text.encode())["unchanged"] == 1  # a second import writes nothing
        sales = text.replace('"namespace":"acme/eng"', '"namespace":"acme/sales"').encode()
        with pytest.raises(PermissionDeniedError):
            admin.import_namespace(sales)
    with Client(api_server.url, make_token(kernel, "acme/eng", "read,write")) as writer:
        with pytest.raises(PermissionDeniedError):
            writer.export_namespace()
    assert not kernel.search("acme/sales", "ArgoCD").hits
