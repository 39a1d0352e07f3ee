"""The docs site: the reference pages are what halomem declares (regenerated from a live server and
the typer app, compared with the committed pages), every option of every command says what it does,
and the site builds with MkDocs in strict mode (a broken link or a page left out of the navigation
fails)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2

from tests.conftest import make_token
from tests.mcp_client import McpSession

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import reference_docs  # noqa: E402


def _commands():  # noqa: ANN202 - (path, click command) of every leaf command
    import typer

    from halomem.cli.main import build_app

    stack = [([], typer.main.get_command(build_app()))]
    while stack:
        path, command = stack.pop()
        if hasattr(command, "commands"):
            stack.extend(([*path, name], sub) for name, sub in command.commands.items())
        else:
            yield path, command


def test_every_option_and_argument_of_every_command_says_what_it_does():
    missing = [f"halomem {' '.join(path)} {p.name}" for path, command in _commands() for p in command.params
               if not (getattr(p, "help", None) or "").strip() and not getattr(p, "hidden", False)]
    assert missing == []
    undocumented = [" ".join(path) for path, command in _commands() if not (command.help or "").strip()]
    assert undocumented == []


def test_the_reference_pages_are_what_the_server_and_the_cli_declare(api_server, kernel):
    spec = httpx2.get(api_server.url + "/openapi.json").json()
    session = McpSession(api_server.url, make_token(kernel, "acme", "read,write,admin"))
    try:
        tools = [t.model_dump(mode="json") for t in session._run("list_tools").tools]
    finally:
        session.close()
    stale = [name for name, text in reference_docs.pages(spec, tools).items()
             if (ROOT / "docs" / "reference" / name).read_text(encoding="utf-8") != text]
    if (reference_docs.TYPESCRIPT / "openapi.json").read_text(encoding="utf-8") != reference_docs.openapi_json(spec):
        stale.append("clients/typescript/openapi.json")
    if (reference_docs.TYPESCRIPT / "src" / "errors.ts").read_text(encoding="utf-8") != reference_docs.typescript_errors():
        stale.append("clients/typescript/src/errors.ts")
    assert stale == [], f"run `python tools/reference_docs.py` (stale: {stale})"


def test_the_site_builds_in_strict_mode(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about MkDocs 2, not about this site
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
