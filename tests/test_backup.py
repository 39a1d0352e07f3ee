"""Backup and restore with PostgreSQL's own tools, on the store the suite runs on (the embedded
server, or under make test-external the least-privilege external one): after a restore the same
searches give the same answers, history and keys are back, `audit verify --expect-head` with the
backup's head holds, a non-empty store is refused without --force, and a file that is not a
backup is one line with exit 3. On the embedded default, a restore into a fresh data dir too."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile

import pytest

QUERIES = ("how do we deploy", "when is staging rebuilt", "who is on call")


def _seed(kernel) -> dict:  # noqa: ANN001
    kernel.remember("acme", "Priya Raman is the CTO of acme")
    kernel.remember("acme/eng", "Deploys go through ArgoCD canaries", source="runbook", provenance={"page": 3})
    old = kernel.remember("acme/eng", "Staging is rebuilt every Sunday night")
    new = kernel.supersede("acme/eng", old.id, "Staging is rebuilt every Saturday night")
    kernel.ingest_bytes("acme/eng", b'{"content": "Marco is on call this week", "key": "oncall"}\n', fmt="jsonl")
    kernel.set_policy("acme/eng", {"retriever": "keyword"})
    return {"chain": [old.id, new.id]}


def _answers(kernel) -> list[list[tuple[str, str]]]:  # noqa: ANN001
    return [[(h.id, h.content) for h in kernel.search("acme/eng", q, k=5).hits] for q in QUERIES]


def test_a_backup_restores_over_a_changed_store(kernel, cli, tmp_path):
    seeded = _seed(kernel)
    before = _answers(kernel)
    path = tmp_path / "store.backup"
    made = cli("db", "backup", str(path), "--json")
    assert made.returncode == 0, made.stderr
    done = json.loads(made.stdout)
    assert done["memories"] == 5 and done["audit_head"] and oct(path.stat().st_mode & 0o777) == "0o600"
    with tarfile.open(path) as tar:
        assert {"manifest.json", "database.dump"} <= set(tar.getnames())
    again = cli("db", "backup", str(path))
    assert again.returncode == 5 and "exists" in again.stderr  # never overwritten by accident

    kernel.remember("acme/eng", "A memory written after the backup")
    kernel.supersede("acme/eng", seeded["chain"][1], "Staging is never rebuilt")
    refused = cli("db", "restore", str(path))
    assert refused.returncode == 5 and "not empty" in refused.stderr and refused.stderr.count("\n") == 1
    assert any("after the backup" in h.content for h in kernel.search("acme/eng", "written after the backup").hits)

    back = cli("db", "restore", str(path), "--force", "--json")
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["audit_head"].split(":")[0] >= done["audit_head"].split(":")[0]
    kernel.index.catalog.forget()
    assert _answers(kernel) == before
    assert [r.id for r in kernel.history("acme/eng", seeded["chain"][0])] == seeded["chain"]
    assert not kernel.search("acme/eng", "written after the backup").hits
    verified = cli("audit", "verify", "--expect-head", done["audit_head"])
    assert verified.returncode == 0, verified.stderr
    assert cli("policy", "show", "--ns", "acme/eng", "--json").stdout.count("keyword") >= 1
    assert kernel.audit_tail(5, "restore")[-1].fields["replaced"] > 0


def test_not_a_backup_is_one_line(cli, tmp_path):
    for body in (b"", b"garbage", b"\x00" * 4096):
        path = tmp_path / "bad.backup"
        path.write_bytes(body)
        run = cli("db", "restore", str(path))
        assert run.returncode == 3 and run.stderr.count("\n") == 1 and "not a halomem backup" in run.stderr
    missing = cli("db", "restore", str(tmp_path / "nope.backup"))
    assert missing.returncode == 3 and "Traceback" not in missing.stderr


@pytest.mark.skipif(bool(os.environ.get("HALOMEM_DATABASE_URL")), reason="a fresh embedded data dir")
def test_a_backup_restores_into_a_fresh_data_dir(kernel, cli, cli_env, tmp_path):
    _seed(kernel)
    before = _answers(kernel)
    path = tmp_path / "store.backup"
    done = json.loads(cli("db", "backup", str(path), "--json").stdout)
    fresh = {**cli_env, "HALOMEM_HOME": str(tmp_path / "elsewhere"), "HALOMEM_EMBEDDER": "hash"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "halomem.cli.main", *args], env=fresh, capture_output=True,
                              text=True, timeout=300)

    try:
        restored = run("db", "restore", str(path))
        assert restored.returncode == 0, restored.stderr
        for query, expected in zip(QUERIES, before):
            found = json.loads(run("search", "--ns", "acme/eng", query, "--k", "5", "--json").stdout)
            assert [(h["id"], h["content"]) for h in found["hits"]] == expected
        assert run("audit", "verify", "--expect-head", done["audit_head"]).returncode == 0
    finally:
        run("db", "stop", "--force")
