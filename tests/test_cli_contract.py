"""The CLI contract: one JSON shape per command, errors as one line (and a JSON object under --json),
usage errors and --version, stdin, configuration, and output readable at 80 columns."""
import json
import os
import pty
import subprocess
import sys

import pytest

JSON_KEYS = {
    ("remember",): {"id", "namespace", "source", "request_id", "status", "similar"},
    ("supersede",): {"id", "namespace", "source", "request_id", "supersedes", "status", "similar"},
    ("erase",): {"erased", "namespace", "request_id", "versions", "purged", "purge_not_done"},
    ("search",): {"query", "namespace", "driver", "requested_driver", "fallback", "request_id", "tokens", "dropped", "as_of",
                  "elapsed_ms", "hits"},
    ("ingest",): {"written", "namespace", "ids", "unchanged", "superseded", "request_id", "skipped", "items",
                  "extraction"},
    ("entity", "add"): {"id", "name", "aliases", "linked", "namespace", "request_id"},
    ("concept", "put"): {"path", "namespace", "ref", "request_id"},
    ("policy", "set"): {"retriever", "consolidate", "ttl", "llm_tokens_per_day", "namespace", "from", "origins"},
    ("policy", "show"): {"retriever", "consolidate", "ttl", "llm_tokens_per_day", "namespace", "from", "origins"},
    ("policy", "clear"): {"namespace", "cleared"},
    ("audit", "verify"): {"ok", "rows", "first_bad_seq", "reason", "head_seq", "head_hash"},
    ("token", "create"): {"id", "token", "namespace", "scopes", "expires_at", "name"},
    ("db", "status"): {"running", "pid", "pgdata", "socket_dir", "attached_pids", "pinned"},
}


def test_every_command_has_its_json_shape(cli, tmp_path):
    def run(*args: str, stdin: str | None = None) -> dict | list:
        result = cli(*args, "--json", input=stdin)
        assert result.returncode == 0, (args, result.stderr)
        return json.loads(result.stdout)

    made = run("remember", "--ns", "acme/eng", "Deploys go through ArgoCD canaries")
    newer = run("supersede", "--ns", "acme/eng", made["id"], "Deploys now use Flux")
    notes = tmp_path / "n.jsonl"
    notes.write_text('{"content": "one note", "key": "k1"}\n', encoding="utf-8")
    shapes = {
        ("remember",): made, ("supersede",): newer,
        ("search",): run("search", "--ns", "acme/eng", "deploys"),
        ("ingest",): run("ingest", "--ns", "acme/eng", str(notes)),
        ("entity", "add"): run("entity", "add", "--ns", "acme", "Priya Raman"),
        ("concept", "put"): run("concept", "put", "--ns", "acme", "eng/deploys", "How deploys work"),
        ("policy", "set"): run("policy", "set", "--ns", "acme", "--retriever", "keyword"),
        ("policy", "show"): run("policy", "show", "--ns", "acme/eng"),
        ("policy", "clear"): run("policy", "clear", "--ns", "acme"),
        ("erase",): run("erase", "--ns", "acme/eng", newer["id"], "--reason", "test"),
        ("audit", "verify"): run("audit", "verify"),
        ("token", "create"): run("token", "create", "--ns", "acme", "--name", "bot"),
        ("db", "status"): run("db", "status") if not os.environ.get("HALOMEM_DATABASE_URL") else None,
    }
    for command, data in shapes.items():
        if data is not None:
            assert set(data) == JSON_KEYS[command], (command, sorted(data))
    hit = shapes[("search",)]["hits"][0]
    assert set(hit) == {"rank", "score", "tier", "ref", "id", "namespace", "source", "content", "token_estimate",
                         "valid_from", "provenance", "speaker", "session", "said_at"}
    assert isinstance(run("history", "--ns", "acme/eng", made["id"]), list)
    assert isinstance(run("concept", "search", "--ns", "acme/eng", "deploys"), list)
    assert isinstance(run("entity", "list", "--ns", "acme"), list)
    assert isinstance(run("token", "list"), list)
    assert isinstance(run("audit", "tail"), list)


def test_errors_under_json_are_an_object_on_stdout_and_one_line_on_stderr(cli):
    result = cli("history", "--ns", "acme", "m_missing", "--json")
    assert result.returncode == 4 and result.stderr.count("\n") == 1
    assert json.loads(result.stdout) == {"error": {"kind": "not found", "exit_code": 4,
                                                   "message": result.stderr.strip().split(": ", 2)[2]}}
    usage = cli("search", "--json")
    assert usage.returncode == 2 and json.loads(usage.stdout)["error"]["kind"] == "usage"


@pytest.mark.parametrize("args", [("search",), ("bogus",), ("search", "--k", "x", "q"), ("remember", "--nope", "x")])
def test_usage_errors_are_one_line_exit_2(cli, args):
    result = cli(*args)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("halomem: usage: ") and "-h'" in result.stderr


def test_version_and_help_are_fast_paths(cli):
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("halomem ")
    assert cli("--help").returncode == 0


def test_malformed_database_url_is_a_configuration_error(cli):
    result = cli("search", "--ns", "acme", "x", env={"HALOMEM_DATABASE_URL": "not a url at all"})
    assert result.returncode == 8 and result.stderr.startswith("halomem: configuration error:")


def test_config_file_namespace_is_honoured(cli, settings, tmp_path):
    if settings.database_url:
        pytest.skip("uses the embedded test home")
    config = settings.home / "config.toml"
    config.write_text('ns = "acme/eng"\n', encoding="utf-8")
    try:
        made = cli("remember", "from the config file's namespace", "--json")
        assert made.returncode == 0 and json.loads(made.stdout)["namespace"] == "acme/eng"
        flag = cli("remember", "--ns", "acme", "the flag wins", "--json")
        assert json.loads(flag.stdout)["namespace"] == "acme"
    finally:
        config.unlink()


def test_stdin_for_remember_and_ingest(cli):
    made = cli("remember", "--ns", "acme", "-", "--json", input="a fact\nfrom a pipe\n")
    assert made.returncode == 0
    hits = json.loads(cli("search", "--ns", "acme", "fact pipe", "--json").stdout)["hits"]
    assert hits[0]["content"] == "a fact\nfrom a pipe"
    lines = '{"content": "piped one"}\n{"content": "piped two"}\n'
    assert json.loads(cli("ingest", "--ns", "acme", "-", "--json", input=lines).stdout)["written"] == 2
    csv_in = cli("ingest", "--ns", "acme", "-", "--format", "csv", "--json", input="content\nfrom csv\n")
    assert json.loads(csv_in.stdout)["written"] == 1


LONG = ("The kubernetes upgrade goes through staging first, then canary nodes, then the rest of the fleet "
        "over two days, with a rollback plan that the on-call engineer rehearses beforehand.")


def _pty_run(args: list[str], env: dict) -> str:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "halomem.cli.main", *args], stdout=slave, stderr=slave,
                            env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("piped", [True, False])
def test_results_are_readable_at_any_width(cli, cli_env, kernel, columns, piped):
    deep = "acme/eng/infra/k8s"
    made = kernel.remember(deep, LONG, source="runbook-k8s")
    head = kernel.supersede(deep, made.id, LONG.replace("two days", "three days")).id
    env = {**cli_env, "COLUMNS": str(columns), "TERM": "xterm"}
    for args in (["search", "--ns", deep, "kubernetes upgrade rollback"], ["history", "--ns", deep, made.id]):
        text = cli(*args, env=env).stdout if piped else _pty_run(args, env)
        lines = [line.rstrip() for line in text.replace("\r", "").splitlines()]
        assert head in text and (args[0] == "search" or made.id in text)  # ids are never truncated
        assert all(len(line) <= columns or head in line or made.id in line for line in lines), lines
        assert "\x1b" not in text or not piped
        flat = " ".join(line.strip() for line in lines)
        assert "then the rest of the fleet over" in flat  # the text itself, readable, not 8 characters wide
