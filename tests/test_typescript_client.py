"""The TypeScript client (clients/typescript), with node: its types are what openapi-typescript
makes of the committed OpenAPI document (itself checked against the server by test_docs_site), it
compiles strict, and its own tests (node --test) pass against a live server."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import make_token

PACKAGE = Path(__file__).resolve().parents[1] / "clients" / "typescript"


@pytest.fixture(scope="module")
def npx() -> str:
    found = shutil.which("npx")
    assert found, "node 20+ with npx is needed for the TypeScript client's tests"
    assert (PACKAGE / "node_modules" / ".bin" / "tsc").exists(), \
        "clients/typescript has no node_modules: make install runs npm ci there"
    return found


def test_the_types_are_generated_from_the_committed_openapi_document(npx, tmp_path):
    out = tmp_path / "schema.d.ts"
    subprocess.run([npx, "--no-install", "openapi-typescript", "./openapi.json", "--output", str(out)], cwd=PACKAGE,
                   check=True, capture_output=True, timeout=120)
    committed = (PACKAGE / "src" / "schema.d.ts").read_text(encoding="utf-8")
    assert out.read_text(encoding="utf-8") == committed, "run `python tools/reference_docs.py` (or npm run generate)"


def test_the_typescript_client_against_a_live_server(npx, api_server, kernel, tmp_path):
    built = tmp_path / "dist"
    compiled = subprocess.run([npx, "--no-install", "tsc", "-p", "tsconfig.json", "--outDir", str(built)], cwd=PACKAGE,
                              capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    (built / "package.json").write_text('{"type": "module"}', encoding="utf-8")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")},
           "HALOMEM_URL": api_server.url, "HALOMEM_TOKEN": make_token(kernel, "acme/eng", "read,write"),
           "HALOMEM_READ_TOKEN": make_token(kernel, "acme/eng", "read"),
           "HALOMEM_SIBLING_TOKEN": make_token(kernel, "acme/sales", "read")}
    ran = subprocess.run(["node", "--test", str(built / "test")], cwd=PACKAGE, env=env, capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert "# pass 3" in ran.stdout and "# fail 0" in ran.stdout
