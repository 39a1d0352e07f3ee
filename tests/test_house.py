"""The house rules a reviewer would otherwise check by hand: the import graph runs one way with no
circles (tools/import_graph.py), a driver is run one way (halomem.planning.run_driver), nothing
outside the view's module reaches into a view's private state, and every literal bound lives in
halomem/limits.py."""
import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "halomem"


def _load(name: str, path: Path):  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_imports_run_one_way_and_close_no_circle():
    graph = _load("import_graph", ROOT / "tools" / "import_graph.py")
    assert graph.problems() == []
    edges = graph.edges()
    assert ("kernel", "db") in edges and ("server", "pipeline") in edges  # the graph is really read
    assert graph.circles({("a", "b"): [], ("b", "c"): [], ("c", "a"): []}) == [["a", "b", "c"]]


def _python_files():  # noqa: ANN202
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts]


def test_only_the_runner_calls_a_drivers_plan():
    """Host side, ``.plan(`` is called by planning.run_driver alone (a cartridge's worker runs its
    driver in its own process, on the other side of the boundary)."""
    callers = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "plan":
                callers.append(str(path.relative_to(ROOT)))
    assert sorted(set(callers)) == ["halomem/planning.py", "halomem/sandbox/worker.py"]


def test_nothing_outside_the_view_module_touches_a_views_private_state():
    view_module = PACKAGE / "drivers" / "view.py"
    private = {n.attr for n in ast.walk(ast.parse(view_module.read_text()))
               if isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
               and isinstance(n.value, ast.Name) and n.value.id == "self"}
    assert {"_admitted", "_reader", "_scope"} <= private
    offenders = []
    for path in _python_files():
        if path == view_module:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr in private and isinstance(node.value, ast.Name)
                    and "view" in node.value.id.lower()):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value.id}.{node.attr}")
    assert offenders == []


CONSTRAINTS = {"max_length", "min_length", "le", "lt", "ge", "gt"}


def test_every_literal_input_bound_lives_in_limits():
    """A route's or a tool's declared bound (pydantic's max_length, le, ...) is a limits.py name, so
    the edge, the kernel's checks and the docs cannot disagree; 0, 1 and 2 (non-empty, a lane's
    range) are not bounds. And the bounds the house once kept elsewhere are limits.py names."""
    from halomem import limits

    for name in ("MAX_CURSOR_CHARS", "MAX_REASON_CHARS", "MAX_DAYS", "MAX_AUDIT_ROWS", "MAX_FILES"):
        assert isinstance(getattr(limits, name), int)
    offenders = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg in CONSTRAINTS and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, (int, float)) and abs(node.value.value) > 2:
                offenders.append(f"{path.relative_to(ROOT)}:{node.value.lineno} {node.arg}={node.value.value}")
    assert offenders == []


def test_the_client_distribution_imports_nothing_of_the_server():
    """clients/python is installed without halomem: none of its modules (the framework adapters
    included) imports halomem, so `pip install ./clients/python` is all a client needs."""
    client = ROOT / "clients" / "python" / "halomem_client"
    offenders = []
    for path in sorted(client.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            offenders += [f"{path.name}: {n}" for n in names if n == "halomem" or n.startswith("halomem.")]
    assert len(list(client.rglob("*.py"))) >= 8 and offenders == []
