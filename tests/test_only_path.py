"""The pipeline and the operations layer are the only way a transport reaches an operation: a
transport module (the server, the MCP tools, the CLI's commands) that calls an operation on the
kernel, authenticates a token itself or appends audit rows itself fails this test."""
from __future__ import annotations

import ast
from pathlib import Path

import halomem
from halomem.kernel import Kernel

ROOT = Path(halomem.__file__).parent
TRANSPORTS = [*sorted((ROOT / "server").glob("*.py")), *sorted((ROOT / "cli").glob("*_cmds.py"))]
# what a transport may touch on the kernel: the composition root's parts and the housekeeping a
# server runs on its own clock (no caller asks for it), not its operations
ALLOWED = {"engine", "embedder", "registry", "settings", "record_audit_head", "maintain_audit", "prune_queries", "expire",
           "close",
           "boot"}
OPERATIONS = {name for name in dir(Kernel) if not name.startswith("_") and callable(getattr(Kernel, name))} - ALLOWED
FORBIDDEN_NAMES = {"PrincipalStore"}


def offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    kernels = {"kernel", "k"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in OPERATIONS:
            base = node.value
            via_kernel = (isinstance(base, ast.Name) and base.id in kernels) or (
                isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "kernel")
            if via_kernel:
                found.append(f"{path.name}:{node.lineno} calls kernel.{node.attr} around halomem.ops")
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            found.append(f"{path.name}:{node.lineno} uses {node.id}: only halomem.pipeline authenticates and audits")
        if isinstance(node, ast.Attribute) and (node.attr == "audit_event" or (
                node.attr == "append" and isinstance(node.value, ast.Name) and node.value.id == "audit")):
            found.append(f"{path.name}:{node.lineno} appends audit rows around halomem.ops and halomem.pipeline")
        if isinstance(node, ast.Attribute) and node.attr == "authenticate" and not _is_pipeline(node.value):
            found.append(f"{path.name}:{node.lineno} authenticates around halomem.pipeline")
    return found


def _is_pipeline(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "pipeline") or (
        isinstance(node, ast.Attribute) and node.attr == "pipeline")


def test_transports_reach_operations_only_through_the_pipeline():
    assert len(TRANSPORTS) > 10 and "search" in OPERATIONS and "remember" in OPERATIONS
    problems = [p for path in TRANSPORTS for p in offences(path)]
    assert problems == [], "\n".join(problems)


def test_the_check_catches_a_transport_that_goes_around(tmp_path):
    sneaky = tmp_path / "sneaky_cmds.py"
    sneaky.write_text("def run(kernel):\n    kernel.remember('acme', 'x')\n"
                      "def auth(store, token):\n    return PrincipalStore(store).authenticate(token)\n"
                      "def note(conn):\n    audit.append(conn, 'acme', 'x', 'y', 'z')\n")
    assert len(offences(sneaky)) == 4  # kernel.remember, PrincipalStore, .authenticate, audit.append
