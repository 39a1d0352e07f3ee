"""Wrong or misleading answers a new user met in the first hour (the first-hour issue), one test each."""
from __future__ import annotations

import json
import time
from datetime import timedelta

import httpx2
import pytest

from tests.conftest import count, make_token
from tests.serving import bearer


def test_materializing_a_concept_twice_makes_one_memory_and_names_the_request(api_server, kernel):
    token = make_token(kernel, "acme/eng", "read,write")
    with httpx2.Client(base_url=api_server.url, headers=bearer(token)) as http:
        assert http.put("/v1/concepts/runbooks/deploy", json={"content": "Deploys use Flux"}).status_code == 200
        first = http.post("/v1/concepts:materialize", json={"path": "runbooks/deploy"})
        second = http.post("/v1/concepts:materialize", json={"path": "runbooks/deploy"})
    assert first.status_code == second.status_code == 201
    assert first.json()["id"] == second.json()["id"]
    assert first.json()["request_id"] == first.headers["x-request-id"]
    assert second.json()["request_id"] == second.headers["x-request-id"]
    assert count(kernel, "SELECT count(*) FROM memories WHERE source = 'concept:runbooks/deploy'") == 1


def test_token_list_shows_expired_tokens_as_expired_and_never_truncates_ids(kernel, cli):
    make_token(kernel, "acme/eng", "read", expires_in=timedelta(seconds=1))
    make_token(kernel, "acme/eng-with-a-rather-long-namespace/below", "read,write,admin")
    time.sleep(1.5)
    listed = cli("token", "list", env={"COLUMNS": "80"})
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(cli("token", "list", "--json").stdout)
    states = {r["namespace"]: r["status"] for r in rows}
    assert states["acme/eng"] == "expired"
    for r in rows:
        assert r["id"] in listed.stdout  # whole, copyable for `token revoke`
    assert "expired" in listed.stdout


def test_policy_set_refuses_an_unknown_driver_unless_told_it_comes_later(cli, kernel):
    refused = cli("policy", "set", "--ns", "acme/eng", "--retriever", "nosuch")
    assert refused.returncode == 3 and refused.stderr.count("\n") == 1 and "--allow-unmounted" in refused.stderr
    assert count(kernel, "SELECT count(*) FROM policies") == 0
    later = cli("policy", "set", "--ns", "acme/eng", "--retriever", "nosuch", "--allow-unmounted")
    assert later.returncode == 0 and "not mounted" in later.stderr
    shown = json.loads(cli("search", "--ns", "acme/eng", "--json", "anything").stdout)
    assert shown["driver"] == "baseline" and shown["requested_driver"] == "nosuch"  # the seed's fallback


def test_drivers_list_names_a_third_party_cartridge_and_its_origin(cli_env, tmp_path):
    import subprocess
    import sys

    from tests.cartridges import install_third_party

    root = install_third_party(tmp_path)
    env = {**cli_env, "PYTHONPATH": str(root)}
    run = subprocess.run([sys.executable, "-m", "halomem.cli.main", "drivers", "list", "--json"], env=env,
                         capture_output=True, text=True, timeout=120)
    rows = {r["name"]: r for r in json.loads(run.stdout)}
    third = rows["thirdparty"]
    assert "IsolatedDriver" not in third["class"] and third["class"] == "entry_point:thirdparty"
    assert third["origin"].startswith("entry point thirdparty (") and "thirdparty_cartridge.py" in third["origin"]
    assert third["origin"].endswith("sandboxed") and rows["baseline"]["origin"] == "in-process"


def test_a_namespace_differing_only_in_case_gets_a_warning(cli, kernel):
    kernel.remember("acme/eng", "Deploys go through ArgoCD canaries")
    wrong = cli("search", "--ns", "Acme/Eng", "deploys")
    assert wrong.returncode == 0 and "0 hits" in wrong.stdout
    assert "acme/eng (differing only in case)" in wrong.stderr and wrong.stderr.count("\n") == 1
    right = cli("search", "--ns", "acme/eng", "deploys")
    assert right.returncode == 0 and right.stderr == ""
    as_json = json.loads(cli("search", "--ns", "acme/eng", "--json", "deploys").stdout)
    assert as_json["elapsed_ms"] > 0  # as over HTTP


def test_remote_ingest_names_the_file_like_local_and_says_how_to_skip_over_any_transport(api_server, kernel, cli,
                                                                                          tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"content": "fine"}\n{"content": "bad", "colour": "red"}\n')
    local = cli("ingest", "--ns", "acme/eng", str(notes))
    token = make_token(kernel, "acme/eng", "read,write")
    remote = cli("ingest", str(notes), env={"HALOMEM_URL": api_server.url, "HALOMEM_TOKEN": token})
    assert local.returncode == remote.returncode == 11
    for run in (local, remote):
        assert f"{notes}:2:" in run.stderr and "skip_bad=true over HTTP" in run.stderr
    body = httpx2.post(api_server.url + "/v1/memories:ingest", headers=bearer(token),
                       content=notes.read_bytes()).json()
    assert "body.jsonl:2:" in body["detail"]  # no name given: the body's


def test_erase_takes_an_optional_reason_on_every_transport(api_server, kernel):
    token = make_token(kernel, "acme/eng", "read,write")
    ids = [kernel.remember("acme/eng", f"to erase {i}").id for i in range(3)]
    with httpx2.Client(base_url=api_server.url, headers=bearer(token)) as http:
        assert http.post(f"/v1/memories/{ids[0]}/erase").status_code == 200  # no body at all
        assert http.post(f"/v1/memories/{ids[1]}/erase", json={}).status_code == 200
    from tests.mcp_client import McpSession

    session = McpSession(api_server.url, token)
    try:
        ok, erased = session.call("erase", {"id": ids[2]})
        assert ok and erased == {"erased": ids[2], "namespace": "acme/eng", "request_id": erased["request_id"],
                                 "versions": [ids[2]]}
    finally:
        session.close()


@pytest.mark.parametrize("args", [("audit", "verify"), ("db", "status"), ("policy", "export"), ("index", "list")])
def test_operator_commands_refuse_to_act_locally_in_remote_mode(cli, args):
    run = cli(*args, env={"HALOMEM_URL": "http://127.0.0.1:9", "HALOMEM_TOKEN": "hm_x"})
    assert run.returncode == 3 and run.stderr.count("\n") == 1
    assert "acts on the local data dir, not on HALOMEM_URL's server" in run.stderr


@pytest.mark.parametrize("args", [("token", "list"), ("token", "create", "--ns", "acme", "--name", "x"),
                                  ("token", "revoke", "0123456789abcdef")])
def test_token_commands_go_to_the_server_in_remote_mode(cli, args):
    """An admin token manages tokens on its server (tests/test_remote_cli.py); never the local store."""
    from halomem.errors import ServiceUnreachableError

    run = cli(*args, env={"HALOMEM_URL": "http://127.0.0.1:9", "HALOMEM_TOKEN": "hm_x"})
    assert run.returncode == ServiceUnreachableError.exit_code and run.stderr.count("\n") == 1
    assert "cannot reach halomem server at http://127.0.0.1:9" in run.stderr
