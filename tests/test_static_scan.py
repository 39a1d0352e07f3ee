"""The read-only check against a corpus of evasion attempts, and legit drivers it must accept."""
import textwrap

import pytest

from halomem.conformance import load_driver, scan_source

CARTRIDGE = '''
from halomem.retrieval import hybrid_rank
from halomem.types import Capabilities
{header}

class Cartridge:
    name = "hostile"

    def capabilities(self):
        return Capabilities()

    def plan(self, q):
        return hybrid_rank(q)


def _never_called(q):
{body}
'''

# name: (module header, body of a function that is never called, reason the scan must give)
EVASIONS = {
    "plain_import": ("import sqlalchemy", "    return sqlalchemy", "imports sqlalchemy"),
    "db_client": ("import psycopg", "    return psycopg.connect", "imports psycopg"),
    "sqlite": ("", "    import sqlite3\n    return sqlite3", "imports sqlite3"),
    "kernel_module": ("from halomem.index import MemoryIndex", "    return MemoryIndex", "imports halomem.index"),
    "package_root": ("import halomem", "    return halomem", "imports halomem: outside"),
    "root_reexport": ("from halomem import kernel", "    return kernel", "imports halomem (kernel)"),
    "view_module": ("from halomem.drivers.view import build_scoped_view", "    return build_scoped_view",
                    "halomem.drivers.view"),
    "drivers_registry": ("from halomem.drivers import DriverRegistry", "    return DriverRegistry",
                         "halomem.drivers (DriverRegistry)"),
    "relative_db": ("", "    from ..db import engine\n    return engine", "relative import ..db"),
    "relative_missing": ("", "    from .engine_shim import connect\n    return connect",
                         "relative import .engine_shim: no such module"),
    "string_path": ("TARGET = '../db/engine.py'", "    return TARGET", "names a forbidden kernel module"),
    "string_dotted": ("", "    return 'halomem.write.writer'", "names a forbidden kernel module"),
    "string_client": ("", "    return 'psycopg'", "names forbidden module psycopg"),
    "importlib": ("import importlib", "    return importlib.import_module('halomem' + '.db')", "imports importlib"),
    "importlib_from": ("from importlib import import_module", "    return import_module(q)", "imports importlib"),
    "dunder_import": ("", "    return __import__('halo' + 'mem.kernel')", "uses __import__"),
    "builtins_getattr": ("", "    return getattr(__builtins__, '__imp' + 'ort__')('halomem.db')", "__builtins__"),
    "builtins_module": ("import builtins", "    return builtins", "imports builtins"),
    "sys_modules": ("import sys", "    return sys.modules['halomem.db.engine']", "uses sys.modules"),
    "sys_getframe": ("import sys", "    return sys._getframe(1)", "private attribute _getframe"),
    "frame_walk": ("", "    try:\n        raise ValueError\n    except ValueError as e:\n"
                       "        return e.__traceback__.tb_frame.f_back.f_globals", "__traceback__"),
    "exec": ("", "    exec('import psy' + 'copg')", "uses exec"),
    "eval": ("", "    return eval('__imp' + 'ort__')", "uses eval"),
    "compile": ("", "    return compile('x=1', 'f', 'exec')", "uses compile"),
    "globals": ("", "    return globals()['hybrid_rank']", "uses globals"),
    "computed_getattr": ("", "    return getattr(q.view, '_' + 'reader')", "computed attribute name"),
    "literal_private_getattr": ("", "    return getattr(q.view, '_reader')", "'_reader'"),
    "private_view": ("", "    return q.view._reader.conn", "private attribute _reader"),
    "object_graph": ("", "    return ().__class__.__bases__[0].__subclasses__()", "__class__"),
    "closure_peek": ("", "    return q.view.candidates.__func__.__globals__", "__func__"),
    "pickle": ("import pickle", "    return pickle.loads(b'cos\\nsystem\\n.')", "imports pickle"),
    "marshal": ("import marshal", "    return marshal.loads(b'')", "imports marshal"),
    "encoded_name": ("import base64", "    return __import__(base64.b64decode('aGFsb21lbS5kYg==').decode())",
                     "uses __import__"),
    "gc_walk": ("import gc", "    return [o for o in gc.get_objects() if type(o).__name__ == 'Engine']", "imports gc"),
    "inspect_stack": ("import inspect", "    return inspect.stack()[1].frame.f_locals", "imports inspect"),
    "ctypes": ("import ctypes", "    return ctypes.pythonapi", "imports ctypes"),
    "raw_socket": ("import socket", "    return socket.socket(socket.AF_UNIX)", "imports socket"),
    "subprocess_psql": ("import subprocess", "    return subprocess.run(['psql'])", "imports subprocess"),
    "os_system": ("import os", "    return os.system('psql -c x')", "uses os.system"),
    "data_dir_file": ("", "    return open('/var/lib/halomem/pgdata/postmaster.pid').read()", "data dir"),
    "env_database_url": ("import os", "    return os.environ['HALOMEM_DATABASE_URL']", "data dir or settings"),
    "sql_literal": ("", "    return \"SELECT content FROM memories WHERE namespace = 'conf/b'\"", "is SQL"),
    "sql_write": ("", "    return 'delete from audit_log'", "is SQL"),
    "sql_bytes": ("", "    return b'UPDATE memories SET content = NULL'", "is SQL"),
    "fstring_sql": ("", "    return f'INSERT INTO memories (id) VALUES ({q})'", "is SQL"),
    "concatenated_sql": ("", "    return 'SELECT content ' + 'FROM memories'", "is SQL"),
    "concatenated_module": ("", "    return 'halomem' + '.kernel'", "names a forbidden kernel module"),
    "runpy": ("import runpy", "    return runpy.run_module('halomem.db')", "imports runpy"),
    "pkgutil": ("import pkgutil", "    return pkgutil.resolve_name('halomem.db:engine')", "imports pkgutil"),
    "types_code": ("import types", "    return types.FunctionType", "uses types.FunctionType"),
    "asyncio_unix": ("import asyncio", "    return asyncio.open_unix_connection", "imports asyncio"),
}

LEGIT = {
    "minimal": ("from halomem.types import Capabilities, RetrieverQuery, ScoredRef\n"
                "class D:\n    name = 'd'\n    def capabilities(self):\n        return Capabilities()\n"
                "    def plan(self, q: RetrieverQuery) -> list[ScoredRef]:\n        return []\n"),
    "stdlib_and_numpy": ("import math, re, json, os, collections, dataclasses, functools, heapq, time\n"
                         "import numpy as np\nfrom urllib import request\n"
                         "from halomem.drivers import DriverUnavailableError\n"
                         "from halomem.embed import cosine, terms\nfrom halomem.retrieval import bm25_scores, min_max\n"
                         "URL = os.environ.get('MY_ENGINE_URL', '')\n"
                         "class D:\n    '''Ranks by select words; update the scores; delete nothing.'''\n"
                         "    name = 'd'\n    def __init__(self):\n        self._cache = {}\n"
                         "    def plan(self, q):\n        lexical = getattr(q.view, 'lexical_candidates', None)\n"
                         "        if not URL:\n            raise DriverUnavailableError('no engine')\n"
                         "        return sorted(self._cache.values(), key=lambda r: (-r.score, r.ref))\n"),
    "relative_in_own_package": ("from .helpers import rank\nclass D:\n    name = 'd'\n"
                                "    def plan(self, q):\n        return rank(q)\n"),
}


@pytest.mark.parametrize("name", sorted(EVASIONS))
def test_evasion_is_rejected_with_its_reason(tmp_path, name):
    header, body, reason = EVASIONS[name]
    path = tmp_path / f"{name}.py"
    path.write_text(CARTRIDGE.format(header=header, body=body))
    result = scan_source(path)
    assert not result.ok and any(reason in v for v in result.violations), result.violations


@pytest.mark.parametrize("name", sorted(LEGIT))
def test_legit_driver_is_accepted(tmp_path, name):
    (tmp_path / "helpers.py").write_text("import math\ndef rank(q):\n    return []\n")
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(LEGIT[name]))
    result = scan_source(path)
    assert result.ok, result.violations


def test_own_package_modules_are_scanned_too(tmp_path):
    (tmp_path / "helpers.py").write_text("from .deeper import x\n")
    (tmp_path / "deeper.py").write_text("import sqlalchemy as x\nfrom .helpers import x as y\n")
    (tmp_path / "driver.py").write_text("from .helpers import x\n")
    result = scan_source(tmp_path / "driver.py")
    assert len(result.violations) == 1
    assert "in .helpers (helpers.py): line 1: in .deeper (deeper.py): line 1: imports sqlalchemy" in result.violations[0]


def test_relative_import_inside_halomem_drivers_resolves_to_kernel(tmp_path):
    drivers = tmp_path / "halomem" / "drivers"
    drivers.mkdir(parents=True)
    path = drivers / "sneaky.py"
    path.write_text("from ..db.engine import make_engine\nfrom . import DriverUnavailableError\n"
                    "from .view import build_scoped_view\n")
    result = scan_source(path)
    assert len(result.violations) == 2
    assert "relative import ..db.engine: imports halomem.db.engine" in result.violations[0]
    assert "relative import .view: imports halomem.drivers.view" in result.violations[1]


@pytest.mark.parametrize("name", ["plain_import", "kernel_module", "string_path", "sql_literal", "importlib"])
def test_hostile_but_working_driver_fails_only_read_only(halomem_certify, tmp_path, name):
    header, body, _ = EVASIONS[name]
    path = tmp_path / f"{name}.py"
    path.write_text(CARTRIDGE.format(header=header, body=body))
    loaded = load_driver(str(path))
    report = halomem_certify(loaded.driver, loaded.source_path)
    assert [c.id for c in report.checks if not c.passed] == ["read-only"]


def test_all_shipped_drivers_scan_clean():
    from pathlib import Path

    import halomem.drivers as pkg

    root = Path(pkg.__file__).parent
    shipped = [p for p in root.glob("*.py") if p.name not in ("__init__.py", "view.py")]
    assert {p.stem for p in shipped} >= {"baseline", "graph", "keyword"}
    for p in shipped:
        assert scan_source(p).ok, (p, scan_source(p).violations)
