"""A LangGraph store over halomem: ``HalomemStore(url=..., token=...)`` is a
``langgraph.store.base.BaseStore`` (and ``AsyncHalomemStore`` its async twin, over AsyncClient).

    from halomem_client.langgraph import HalomemStore
    store = HalomemStore(url="http://127.0.0.1:8080", token=token)  # acme/eng's token
    store.put(("users", "u1"), "prefs", {"content": "Prefers dark mode", "topic": "ui"})
    store.search(("users", "u1"), query="what theme does the user like")

How LangGraph's model maps onto halomem's, so that the server's ACL holds:

- The token decides where items live: every item is a memory of the token's namespace. A store
  opened with acme/eng's token can never read or write acme/sales, and two users' stores opened
  with their own tokens (acme/users/u1, acme/users/u2) cannot see each other. LangGraph's
  namespace tuple is a label *inside* that space, never an address the caller chooses.
- An item is a keyed memory (key ``langgraph:["users","u1","prefs"]``): a put of the same key
  supersedes the last version (history kept, ``halomem history``); an unchanged put writes
  nothing. Its text (what search embeds) is the value's ``content``/``text``/``memory`` string and
  the other fields as ``field: value`` lines; the value itself travels as data in the memory's
  provenance and comes back exactly.
- ``search`` with a ``query`` is halomem's retriever (meaning and words, calibrated scores), then
  the namespace prefix and ``filter`` (equality on value fields) over its hits; without a query,
  the newest items. A delete erases the memory for good (its tombstone stays in the audit trail).
- Items an ancestor namespace's token stored are visible (halomem reads up the lineage) but
  read-only: ``get`` prefers the token's own item of a key.

Every operation is written once, as a generator of halomem_client.operations calls; the sync
store performs them with Client, the async one with AsyncClient.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import datetime, timezone
from typing import Any, Generator, Iterable

from langgraph.store.base import (BaseStore, GetOp, Item, ListNamespacesOp, MatchCondition, Op, PutOp, Result,
                                  SearchItem, SearchOp)

from . import operations as calls
from .aio import AsyncClient
from .client import Client
from .errors import ConflictError, HalomemError, NotFoundError

SOURCE = "langgraph"  # the source of every item's memory: a search can be scoped to the store's items
TEXT_FIELDS = ("content", "text", "memory")
PAGE = 100  # the server's largest page of `recent`
MAX_SCAN_PAGES = 50  # a scan without a query reads at most this many pages (5,000 items)
SEARCH_POOL = 200  # hits a query asks the server for, before the namespace prefix and filter

Steps = Generator[calls.Call, Any, Any]


MAX_KEY = 200  # the server's bound on a memory's key


def memory_key(namespace: tuple[str, ...], key: str) -> str:
    """The memory key of an item: readable when it fits the server's bound, else its digest (the
    item's namespace and key travel in its provenance either way)."""
    text = "langgraph:" + json.dumps([*namespace, key], ensure_ascii=False, separators=(",", ":"))
    if len(text) <= MAX_KEY:
        return text
    return "langgraph#" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def item_text(value: dict[str, Any]) -> str:
    """What halomem embeds and matches words in: the value's text, then its other fields."""
    text = next((value[f] for f in TEXT_FIELDS if isinstance(value.get(f), str) and value[f].strip()), None)
    rest = [f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)}"
            for k, v in sorted(value.items()) if not (text is not None and k in TEXT_FIELDS and value[k] == text)]
    return "\n".join(([text] if text is not None else []) + rest) or "{}"


def _about(provenance: dict[str, Any] | None) -> dict[str, Any] | None:
    about = (provenance or {}).get("langgraph")
    return about if isinstance(about, dict) and isinstance(about.get("namespace"), list) else None


def _when(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value) if value else datetime.now(timezone.utc)


def _item(row: Any, about: dict[str, Any], score: float | None = None, searched: bool = False) -> Item:
    namespace, updated = tuple(about["namespace"]), _when(getattr(row, "t_valid_from", None) or
                                                          getattr(row, "valid_from", None))
    created = _when(about.get("created_at")) if about.get("created_at") else updated
    if searched:
        return SearchItem(namespace, about["key"], about.get("value") or {}, created, updated, score)
    return Item(value=about.get("value") or {}, key=about["key"], namespace=namespace, created_at=created,
                updated_at=updated)


def _matches(value: dict[str, Any], filter_: dict[str, Any] | None) -> bool:
    """LangGraph's filter: equality on value fields, or {"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": x}."""
    for field, wanted in (filter_ or {}).items():
        have = value.get(field)
        if isinstance(wanted, dict) and wanted and all(k.startswith("$") for k in wanted):
            for op, x in wanted.items():
                try:
                    ok = {"$eq": have == x, "$ne": have != x}.get(op)
                    if ok is None:
                        ok = {"$gt": have > x, "$gte": have >= x, "$lt": have < x, "$lte": have <= x}[op]
                except (TypeError, KeyError):
                    return False
                if not ok:
                    return False
        elif have != wanted:
            return False
    return True


def _under(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return namespace[:len(prefix)] == tuple(prefix)


def _fits(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part))


# --- the operations, as steps (``own``: the token's namespace) -----------------------------------
def _live_rows(sources: list[str] | None) -> Steps:
    """Every live memory of the store's items, newest first (bounded by MAX_SCAN_PAGES)."""
    rows, cursor = [], None
    for _ in range(MAX_SCAN_PAGES):
        page = yield calls.recent(limit=PAGE, cursor=cursor, sources=sources)
        rows += page.memories
        cursor = page.next_cursor
        if cursor is None:
            break
    return rows


def _find(namespace: tuple[str, ...], key: str, own: str) -> Steps:
    """The live memory holding (namespace, key), by its memory key (one indexed lookup): the
    token's own, else an ancestor's."""
    page = yield calls.recent(limit=PAGE, sources=[SOURCE], keys=[memory_key(namespace, key)])
    rows = [r for r in page.memories if _about(r.provenance)]
    return next((r for r in rows if r.namespace == own), rows[0] if rows else None)


def _get(op: GetOp, own: str) -> Steps:
    row = yield from _find(op.namespace, op.key, own)
    return _item(row, _about(row.provenance)) if row is not None else None


def _put(op: PutOp, own: str) -> Steps:
    found = yield from _find(op.namespace, op.key, own)
    mine = found if found is not None and found.namespace == own else None
    if op.value is None:  # a delete: the memory is erased for good
        if mine is not None:
            try:
                yield calls.erase(mine.id, reason="langgraph delete")
            except (NotFoundError, ConflictError):
                pass  # erased meanwhile
        return None
    created = (_about(mine.provenance) or {}).get("created_at") if mine is not None else None
    about = {"namespace": list(op.namespace), "key": op.key, "value": op.value,
             "created_at": created or datetime.now(timezone.utc).isoformat()}
    line = {"content": item_text(op.value), "source": SOURCE, "provenance": {"langgraph": about},
            "key": memory_key(op.namespace, op.key)}
    yield calls.ingest_bytes(json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n", label="langgraph")
    return None


def _search(op: SearchOp, own: str) -> Steps:
    wanted = op.offset + op.limit
    found: list[Item] = []
    if op.query:
        result = yield calls.search(op.query, k=SEARCH_POOL, sources=[SOURCE])
        for hit in result.hits:
            about = _about(hit.provenance)
            if about and _under(tuple(about["namespace"]), op.namespace_prefix) and _matches(about.get("value") or {},
                                                                                             op.filter):
                found.append(_item(hit, about, hit.score, searched=True))
    else:
        for row in (yield from _live_rows([SOURCE])):
            about = _about(row.provenance)
            if about and _under(tuple(about["namespace"]), op.namespace_prefix) and _matches(about.get("value") or {},
                                                                                             op.filter):
                found.append(_item(row, about, None, searched=True))
            if len(found) >= wanted:
                break
    return found[op.offset:wanted]


def _list_namespaces(op: ListNamespacesOp, own: str) -> Steps:
    seen: dict[tuple[str, ...], None] = {}
    for row in (yield from _live_rows([SOURCE])):
        about = _about(row.provenance)
        if about is None:
            continue
        namespace = tuple(about["namespace"])
        if all(_fits(namespace, c) for c in op.match_conditions or ()):
            seen.setdefault(namespace[:op.max_depth] if op.max_depth is not None else namespace, None)
    return sorted(seen)[op.offset:op.offset + op.limit]


_STEPS = {GetOp: _get, PutOp: _put, SearchOp: _search, ListNamespacesOp: _list_namespaces}


def _steps(op: Op, own: str) -> Steps:
    if type(op) not in _STEPS:
        raise ValueError(f"unknown store operation {type(op).__name__}")
    return _STEPS[type(op)](op, own)


def _run(client: Client, op: Op) -> Any:
    return drive(client, _steps(op, client.namespace))


def drive(client: Client, steps: Steps) -> Any:
    """Perform the calls ``steps`` yields; a call's error is raised inside the steps (which may
    handle it, as a delete that lost a race does)."""
    try:
        call = next(steps)
        while True:
            try:
                answer = client._perform(call)
            except HalomemError as exc:
                call = steps.throw(exc)
                continue
            call = steps.send(answer)
    except StopIteration as done:
        return done.value


async def _arun(client: AsyncClient, op: Op) -> Any:
    steps = _steps(op, await client.namespace())
    try:
        call = next(steps)
        while True:
            try:
                answer = await client._perform(call)
            except HalomemError as exc:
                call = steps.throw(exc)
                continue
            call = steps.send(answer)
    except StopIteration as done:
        return done.value


class HalomemStore(BaseStore):
    """LangGraph's BaseStore over halomem (module doc); ``client`` instead of url and token to share one."""

    supports_ttl = False

    def __init__(self, *, url: str | None = None, token: str | None = None, client: Client | None = None) -> None:
        if client is None and not (url and token):
            raise ValueError("HalomemStore needs url and token (or a halomem_client.Client)")
        self.client = client or Client(url, token)  # type: ignore[arg-type]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [_run(self.client, op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        return await asyncio.to_thread(self.batch, ops)

    def close(self) -> None:
        self.client.close()


class AsyncHalomemStore(BaseStore):
    """The async twin: the same steps, awaited over one AsyncClient (``batch`` from sync code runs
    them on a private event loop)."""

    supports_ttl = False

    def __init__(self, *, url: str | None = None, token: str | None = None,
                 client: AsyncClient | None = None) -> None:
        if client is None and not (url and token):
            raise ValueError("AsyncHalomemStore needs url and token (or a halomem_client.AsyncClient)")
        self._url, self._token = url, token
        self.client = client or AsyncClient(url, token)  # type: ignore[arg-type]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return [await _arun(self.client, op) for op in ops]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        async def run() -> list[Result]:
            async with AsyncClient(self._url, self._token) as own:  # type: ignore[arg-type]
                return [await _arun(own, op) for op in ops]

        if self._url is None:
            raise RuntimeError("AsyncHalomemStore made from a client is async only: use abatch/aget/asearch/aput")
        return asyncio.run(run())

    async def aclose(self) -> None:
        await self.client.aclose()
