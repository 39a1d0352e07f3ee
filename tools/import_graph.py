"""halomem's import graph, room by room: every `import` of a halomem module (at the top of a file or
inside a function alike), grouped by room (a subpackage, or a top-level module), and checked two ways:

- no circles: no room reaches itself through others (strongly connected rooms);
- nothing runs back up: each room sits in a layer (LAYERS, lowest first) and imports only rooms of
  its own layer or below.

`python tools/import_graph.py` prints the rooms' edges and the problems; exit 1 when there are any.
tests/test_repo_hygiene.py runs it.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "halomem"

# lowest first; a room may import rooms of its layer and the layers before it
LAYERS: list[set[str]] = [
    {"errors", "limits", "texts", "records", "instants", "ports", "results", "types", "config", "namespace",
     "fixtures", "ranking_metrics", "ratelimit", "relevance"},
    {"db", "embed", "retrieval"},
    {"audit", "index", "auth", "cold"},
    {"drivers", "write", "intake", "formation", "policy", "feedback", "sandbox", "sidecar"},
    {"planning", "search", "eval"},
    {"mounts", "kernel", "portable"},
    {"admission", "ops", "pipeline", "remote", "conformance", "backup"},
    {"server", "cli", "bench"},
]


def room(module: str) -> str:
    """``halomem.db.engine`` -> ``db``; ``halomem.kernel`` -> ``kernel``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _ours(module: str) -> bool:
    """A module of this package (halomem_client is a distribution of its own, below every room)."""
    return module == "halomem" or module.startswith("halomem.")


def imports(path: Path) -> set[str]:
    """The halomem modules ``path`` imports, relative imports resolved."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if _ours(a.name)}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if _ours(target):
                found.add(target)
                found |= {f"{target}.{a.name}" for a in node.names
                          if (PACKAGE.parent / f"{target}.{a.name}".replace(".", "/")).exists()
                          or (PACKAGE.parent / (f"{target}.{a.name}".replace(".", "/") + ".py")).exists()}
    return found


def edges() -> dict[tuple[str, str], list[str]]:
    """(from room, to room) -> the files that make that import."""
    out: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        here = room(module_name(path))
        for target in imports(path):
            there = room(target)
            if there != here and there != "halomem":
                out.setdefault((here, there), []).append(str(path.relative_to(ROOT)))
    return out


def layer_of(name: str) -> int:
    for i, rooms in enumerate(LAYERS):
        if name in rooms:
            return i
    raise KeyError(name)


def circles(graph: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """Strongly connected rooms (Tarjan), those of more than one room."""
    nodes = sorted({a for a, _ in graph} | {b for _, b in graph})
    succ = {n: sorted(b for a, b in graph if a == n) for n in nodes}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for n in nodes:
        if n not in index:
            visit(n)
    return out


def problems() -> list[str]:
    graph = edges()
    found = []
    rooms = {a for a, _ in graph} | {b for _, b in graph}
    unplaced = sorted(r for r in rooms if not any(r in layer for layer in LAYERS))
    found += [f"room {r!r} has no layer in tools/import_graph.py LAYERS" for r in unplaced]
    if unplaced:
        return found
    for (a, b), files in sorted(graph.items()):
        if layer_of(b) > layer_of(a):
            found.append(f"{a} -> {b} runs back up ({', '.join(files)})")
    found += [f"circle: {' <-> '.join(group)}" for group in circles(graph)]
    return found


def main() -> int:
    graph = edges()
    for (a, b), files in sorted(graph.items()):
        print(f"{a} -> {b}  ({len(files)} file{'s' if len(files) > 1 else ''})")
    found = problems()
    print(f"\n{len(graph)} edges between rooms; {len(found)} problem(s)")
    for p in found:
        print(p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
