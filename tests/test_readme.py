"""The README's code blocks run as pasted (bash and Python), each against a scratch home, so they
stay pasteable. The set-up block (make demo / make test) is what CI itself runs; data paths and
the serving port are the only things replaced (a scratch dir, a free port)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.serving import free_port

README = Path(__file__).parents[1] / "README.md"
FENCE = re.compile(r"^```(bash|python)\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[str, str]]:
    found = [(lang, body) for lang, body in FENCE.findall(README.read_text(encoding="utf-8"))]
    return [(lang, body) for lang, body in found if "make demo" not in body]


def ids() -> list[str]:
    return [f"{lang}-{i}-{body.strip().splitlines()[0][:30]}" for i, (lang, body) in enumerate(blocks())]


@pytest.mark.parametrize("lang,body", blocks(), ids=ids())
def test_readme_block_runs_as_pasted(lang, body, cli_env):
    scratch = Path(tempfile.mkdtemp(prefix="halomem-readme-", dir="/tmp"))
    home = scratch / "home"
    port = str(free_port())
    body = body.replace("/tmp/halomem-serve-demo", str(home)).replace("/tmp/halomem-lib-demo", str(home))
    body = body.replace("8080", port)
    env = {**cli_env, "HALOMEM_HOME": str(home), "HALOMEM_EMBEDDER": "hash",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("HALOMEM_DATABASE_URL", None)  # the README's examples use the embedded default
    command = ["bash", "-euo", "pipefail", "-c", body] if lang == "bash" else [sys.executable, "-c", body]
    try:
        run = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, f"exit {run.returncode}\n--- stdout\n{run.stdout[-2000:]}\n--- stderr\n{run.stderr[-2000:]}"
        assert "Traceback" not in run.stderr
    finally:
        subprocess.run([sys.executable, "-m", "halomem.cli.main", "db", "stop"], env=env, capture_output=True,
                       timeout=120)
