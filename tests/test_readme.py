"""The README's code blocks run as pasted (bash, Python and JavaScript), each against a scratch home,
so they stay pasteable. The set-up block (make demo / make test) is what CI itself runs; data paths
and the serving port are the only things replaced (a scratch dir, a free port). A block that uses
HALOMEM_URL and HALOMEM_TOKEN (the frameworks') gets a live server and a token of acme/eng, as the
README says; the JavaScript one imports the TypeScript client built from clients/typescript."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.serving import free_port

README = Path(__file__).parents[1] / "README.md"
FENCE = re.compile(r"^```(bash|python|js)\n(.*?)^```", re.S | re.M)
TYPESCRIPT = Path(__file__).parents[1] / "clients" / "typescript"


def blocks() -> list[tuple[str, str]]:
    found = [(lang, body) for lang, body in FENCE.findall(README.read_text(encoding="utf-8"))]
    return [(lang, body) for lang, body in found if "make demo" not in body]


def ids() -> list[str]:
    return [f"{lang}-{i}-{body.strip().splitlines()[0][:30]}" for i, (lang, body) in enumerate(blocks())]


def _served(request: pytest.FixtureRequest) -> dict[str, str]:
    """HALOMEM_URL and a read-write token of acme/eng, on the session's server, with one memory."""
    from tests.conftest import make_token

    server, kernel = request.getfixturevalue("api_server"), request.getfixturevalue("kernel")
    kernel.remember("acme/eng", "Deploys go through ArgoCD canaries", source="runbook")
    return {"HALOMEM_URL": server.url, "HALOMEM_TOKEN": make_token(kernel, "acme/eng", "read,write")}


def _typescript_client(scratch: Path) -> None:
    """``halomem-client`` resolvable from ``scratch``: the package compiled into its node_modules."""
    package = scratch / "node_modules" / "halomem-client"
    built = subprocess.run(["npx", "--no-install", "tsc", "-p", "tsconfig.json", "--outDir", str(package / "dist")],
                           cwd=TYPESCRIPT, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    (package / "package.json").write_bytes((TYPESCRIPT / "package.json").read_bytes())


@pytest.fixture()
def readme_llm():
    """A model that answers like a small local one would: each turn a fact, each update an add."""
    from tests.scripted_llm import Reply, ScriptedLLM, turns_of

    def script(request: dict, schema: str) -> Reply:
        if schema == "halomem_facts":
            return Reply(json.dumps({"facts": [{"content": said, "turns": [n]}
                                               for n, said in turns_of(request).items()]}))
        return Reply(json.dumps({"action": "add", "target": None}))

    with ScriptedLLM(script) as llm:
        yield llm


@pytest.mark.parametrize("lang,body", blocks(), ids=ids())
def test_readme_block_runs_as_pasted(lang, body, cli_env, request):
    scratch = Path(tempfile.mkdtemp(prefix="halomem-readme-", dir="/tmp"))
    home = scratch / "home"
    port = str(free_port())
    body = body.replace("/tmp/halomem-serve-demo", str(home)).replace("/tmp/halomem-lib-demo", str(home))
    body = body.replace("8080", port)
    env = {**cli_env, "HALOMEM_HOME": str(home), "HALOMEM_EMBEDDER": "hash",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("HALOMEM_DATABASE_URL", None)  # the README's examples use the embedded default
    if "HALOMEM_URL" in body and "HALOMEM_URL=" not in body:  # a framework's: the server of the block before
        env.update(_served(request))
    if "11434" in body:  # the formation walk-through: the scripted stand-in for Ollama
        llm = request.getfixturevalue("readme_llm")
        body = body.replace("http://localhost:11434/v1", llm.url)
    if lang == "js":
        _typescript_client(scratch)
        (scratch / "example.mjs").write_text(body, encoding="utf-8")
    command = {"bash": ["bash", "-euo", "pipefail", "-c", body], "python": [sys.executable, "-c", body],
               "js": ["node", "example.mjs"]}[lang]
    try:
        run = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, f"exit {run.returncode}\n--- stdout\n{run.stdout[-2000:]}\n--- stderr\n{run.stderr[-2000:]}"
        assert "Traceback" not in run.stderr
    finally:
        subprocess.run([sys.executable, "-m", "halomem.cli.main", "db", "stop"], env=env, capture_output=True,
                       timeout=120)
