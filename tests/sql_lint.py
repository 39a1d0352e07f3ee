"""SQL-level ACL lint: every statement halomem sends is captured (SQLAlchemy cursor events),
attributed to the halomem module that issued it, parsed with pglast and checked:

- reads of memories, concepts, entities or mentions carry the namespace predicate, and reads of
  memories by the index also carry the validity predicate (t_valid_to IS NULL, erased_at IS NULL),
  except for explicit history reads;
- only the write path, the audit log and migrations issue INSERT/UPDATE/DELETE/COPY or DDL; the
  principal store (identity custody) may write the principals table and nothing else.
"""
from __future__ import annotations

import json
import re
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field

from pglast.parser import ParseError, parse_sql_json

ACL_TABLES = {"memories", "concepts", "entities", "mentions", "lexicon", "lexicon_events"}
WRITERS = ("halomem.write", "halomem.audit", "halomem.feedback", "halomem.db.migrations")
IDENTITY_WRITER, IDENTITY_TABLES = "halomem.auth.store", {"principals", "lineage"}  # lineage: revoke's CTE
# the reader's catalog counts every namespace's live rows (lexicon) to choose exact scans over HNSW
# walks: a speed decision, never rows or counts handed to a caller (index/catalog.py)
# reembed and a migration's backfill (v14's content keys): every row of the store, by design
KERNEL_WIDE_READS = {"halomem.index.catalog", "halomem.write.reembed", "halomem.db.migrations"}
HISTORY_READS = {"history", "_explain_not_head", "erase", "replay", "visible_row"}  # superseded/erased rows on purpose
WRITE_KINDS = {"InsertStmt", "UpdateStmt", "DeleteStmt", "CopyStmt", "CreateStmt", "AlterTableStmt", "IndexStmt",
               "GrantStmt", "CreateRoleStmt", "TruncateStmt", "DropStmt", "CreateExtensionStmt", "MergeStmt"}
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s")


@dataclass(frozen=True)
class Captured:
    sql: str
    module: str
    functions: frozenset[str]


@dataclass
class Lint:
    statements: list[Captured] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, sql: str) -> None:
        frame = sys._getframe(1)
        module, functions = None, set()
        while frame is not None:
            name = frame.f_globals.get("__name__", "")
            if name.startswith("halomem.") and not name.startswith("halomem.db.engine"):
                module = module or name
                functions.add(frame.f_code.co_name)
            frame = frame.f_back
        if module:
            with self.lock:
                self.statements.append(Captured(sql, module, frozenset(functions)))


def _walk(node, out: Counter, columns: set[str], nulls: set[str]) -> None:  # noqa: ANN001
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "RangeVar":
                out[value["relname"]] += 1
            elif key == "A_Expr" and isinstance(value.get("lexpr"), dict) and "ColumnRef" in value["lexpr"]:
                fields = value["lexpr"]["ColumnRef"]["fields"]
                last = fields[-1].get("String", {}).get("sval")
                if last:
                    columns.add(last)
            elif key == "NullTest" and value.get("nulltesttype") == "IS_NULL":
                fields = value["arg"].get("ColumnRef", {}).get("fields", [])
                if fields and "String" in fields[-1]:
                    nulls.add(fields[-1]["String"]["sval"])
            _walk(value, out, columns, nulls)
    elif isinstance(node, list):
        for item in node:
            _walk(item, out, columns, nulls)


def check(stmt: Captured) -> list[str]:
    sql = _PLACEHOLDER.sub(lambda m: "$1", stmt.sql)
    try:
        parsed = json.loads(parse_sql_json(sql))
    except ParseError as exc:
        return [f"{stmt.module}: unparseable SQL ({exc}): {stmt.sql[:120]}"]
    problems = []
    for entry in parsed.get("stmts", []):
        body = entry["stmt"]
        kind = next(iter(body))
        tables: Counter = Counter()
        columns: set[str] = set()
        nulls: set[str] = set()
        _walk(body, tables, columns, nulls)
        identity_write = stmt.module == IDENTITY_WRITER and set(tables) <= IDENTITY_TABLES
        if kind in WRITE_KINDS and not stmt.module.startswith(WRITERS) and not identity_write:
            problems.append(f"{stmt.module} issues {kind}: only the write path may write: {stmt.sql[:120]}")
        if kind != "SelectStmt":
            continue
        touched = ACL_TABLES & set(tables)
        if touched and "namespace" not in columns and stmt.module not in KERNEL_WIDE_READS:
            problems.append(f"{stmt.module} reads {sorted(touched)} without the namespace predicate: {stmt.sql[:160]}")
        reader = stmt.module.startswith(("halomem.index", "halomem.drivers"))
        if ("memories" in touched and reader and not (HISTORY_READS & stmt.functions)
                and not {"t_valid_to", "erased_at"} <= nulls):
            problems.append(f"{stmt.module} reads memories without the validity predicate: {stmt.sql[:160]}")
    return problems
