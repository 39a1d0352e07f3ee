"""Wrong or misleading answers a new user met in the first hour (the first-hour issue), one test each."""
from __future__ import annotations

import json
import time
from datetime import timedelta

import httpx2

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
