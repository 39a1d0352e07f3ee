"""The CLI as a thin client: HALOMEM_URL + HALOMEM_TOKEN send data commands to the server with the
same output, --json and exit codes, without importing the database stack."""
import json
import subprocess
import sys

from tests.conftest import make_token


def test_remote_commands_match_local_ones(api_server, kernel, cli):
    token = make_token(kernel, "acme/eng", "read,write")
    remote = {"HALOMEM_URL": api_server.url, "HALOMEM_TOKEN": token}
    made = cli("remember", "Deploys go through ArgoCD canaries", "--source", "runbook", "--json", env=remote)
    assert made.returncode == 0, made.stderr
    first = json.loads(made.stdout)
    assert first["namespace"] == "acme/eng"
    newer = cli("supersede", first["id"], "Deploys now use Flux", "--json", env=remote)
    assert newer.returncode == 0 and json.loads(newer.stdout)["supersedes"] == first["id"]
    lost = cli("supersede", first["id"], "again", env=remote)
    assert lost.returncode == 5 and lost.stderr.startswith("halomem: conflict:")
    for args in (("search", "deploys", "--json"), ("history", json.loads(newer.stdout)["id"], "--json")):
        over_http = cli(*args, env=remote)
        local = cli(*args, "--ns", "acme/eng")
        assert over_http.returncode == local.returncode == 0
        a, b = json.loads(over_http.stdout), json.loads(local.stdout)
        if "hits" in a:
            assert [h["id"] for h in a["hits"]] == [h["id"] for h in b["hits"]]
        else:
            assert [r["id"] for r in a] == [r["id"] for r in b]
    missing = cli("history", "m_nope", env=remote)
    assert missing.returncode == 4 and missing.stderr.startswith("halomem: not found:")
    denied = cli("audit", "tail", env=remote)
    assert denied.returncode == 13 and "admin" in denied.stderr


def test_remote_ingest_and_conflicting_ns(api_server, kernel, cli, tmp_path):
    token = make_token(kernel, "acme/eng", "read,write")
    remote = {"HALOMEM_URL": api_server.url, "HALOMEM_TOKEN": token}
    path = tmp_path / "notes.jsonl"
    path.write_text('{"content": "one"}\n{"content": "two"}\n', encoding="utf-8")
    done = cli("ingest", str(path), "--json", env=remote)
    assert done.returncode == 0 and json.loads(done.stdout)["written"] == 2
    same = cli("search", "one", "--ns", "acme/eng", env=remote)
    assert same.returncode == 0
    clash = cli("search", "one", "--ns", "acme/sales", env=remote)
    assert clash.returncode == 3 and "conflicts with HALOMEM_TOKEN" in clash.stderr
    bad = cli("search", "one", env={**remote, "HALOMEM_TOKEN": "hm_0123456789abcdef_" + "A" * 43})
    assert bad.returncode == 12 and "A" * 43 not in bad.stderr


def test_remote_mode_does_not_import_the_database_stack(api_server, kernel, cli_env):
    token = make_token(kernel, "acme", "read")
    code = ("import sys; sys.argv = ['halomem', 'search', 'anything'];"
            "import halomem.cli.main as m\ntry: m.run()\nexcept SystemExit as e: code = e.code\n"
            "bad = [n for n in ('sqlalchemy', 'psycopg', 'pgvector', 'halomem.kernel') if n in sys.modules]\n"
            "print(code, bad, file=sys.stderr)")
    env = {**cli_env, "HALOMEM_URL": api_server.url, "HALOMEM_TOKEN": token}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.stderr.strip().splitlines()[-1] == "0 []", result.stderr


def test_unreachable_server_is_exit_15_not_a_database_error(cli):
    result = cli("search", "x", env={"HALOMEM_URL": "http://127.0.0.1:9", "HALOMEM_TOKEN": "hm_x"})
    assert result.returncode == 15 and result.stderr.count("\n") == 1 and "server unreachable" in result.stderr


def test_remote_tokens_and_policy_report_use_the_admin_tokens_server(api_server, kernel, cli):
    """What the client once lacked: tokens (create below the admin's namespace, list, revoke) and
    the policy report, over HALOMEM_URL with the same output as locally; never above the token."""
    admin = {"HALOMEM_URL": api_server.url, "HALOMEM_TOKEN": make_token(kernel, "acme/eng", "read,write,admin")}
    made = cli("token", "create", "--ns", "acme/eng/bots", "--name", "nightly", "--scope", "read", "--expires", "2h",
               "--json", env=admin)
    assert made.returncode == 0, made.stderr
    issued = json.loads(made.stdout)
    assert issued["namespace"] == "acme/eng/bots" and issued["token"].startswith("hm_") and issued["expires_at"]
    listed = json.loads(cli("token", "list", "--json", env=admin).stdout)
    assert issued["id"] in [p["id"] for p in listed] and all(p["namespace"].startswith("acme/eng") for p in listed)
    above = cli("token", "create", "--ns", "acme", "--name", "escalate", env=admin)
    assert above.returncode == 13 and above.stdout == ""
    revoked = cli("token", "revoke", issued["id"], "--json", env=admin)
    assert revoked.returncode == 0 and json.loads(revoked.stdout)["status"] == "revoked"
    shown = cli("token", "list", env={**admin, "COLUMNS": "200"})
    assert shown.returncode == 0 and "revoked" in shown.stdout
    report = cli("policy", "report", "--json", env=admin)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["namespace"] == "acme/eng"
    reader = {**admin, "HALOMEM_TOKEN": make_token(kernel, "acme/eng", "read")}
    assert cli("token", "list", env=reader).returncode == 13
