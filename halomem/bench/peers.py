"""bench peers: halomem beside the stores a team would otherwise pick, on the same data, in one
interleaved run (issue 52): LoCoMo with each conversation a namespace, one embedded PostgreSQL, one
embedder (halomem's default; the peer is handed the same embed function), the same k.

- quality: R@10 and nDCG@10 against LoCoMo's evidence turns, and how many questions got fewer
  than k hits (a namespace filter applied after an approximate index scan loses results);
- search: what a caller pays, the query embedded included: for halomem the whole operation (the
  caller's policy, the ScopedView, the driver, the audit row with its refs), for the peer its
  ``search``; the order of the systems is shuffled per question, so drift hits both alike;
- write: one memory with its embedding: halomem's ``remember`` (consolidation, audit row) against
  the peer's ``put``, interleaved the same way.

Peers are optional dev dependencies, measured where installed: LangGraph's PostgresStore
(langgraph-checkpoint-postgres). Nothing here is imported at run time by halomem itself.
"""
from __future__ import annotations

import random
import statistics
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from . import report
from .datasets import Dataset, load_locomo
from .harness import EVAL_K, ephemeral_kernel, load

WARM = 20  # untimed searches per system first (caches, plans, the embedder's session)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _pcts(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"p50": round(statistics.median(ordered), 2), "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
            "mean": round(statistics.fmean(ordered), 2)}


class HalomemSide:
    name = "halomem"

    def __init__(self, kernel: Any, ds: Dataset, say: Callable[[str], None]) -> None:
        from ..ops import for_operator

        self.kernel = kernel
        self.to_doc = load(kernel, ds, say)
        self.ops = {ns: for_operator(kernel, ns) for ns in ds.docs}

    def search(self, ns: str, query: str) -> list[str]:
        result = self.ops[ns].search(query, k=EVAL_K, token_budget=1_000_000)
        return [self.to_doc.get(h.id or "", "") for h in result.hits]

    def write(self, ns: str, key: str, text: str) -> None:
        from ..ops import for_operator

        if ns not in self.ops:
            self.ops[ns] = for_operator(self.kernel, ns)
        self.ops[ns].remember(text)


def libpq_url(kernel: Any) -> str:
    """The kernel's database as a plain postgresql:// URL with its password (the peer's store and the
    server leg's processes connect with it)."""
    return kernel.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


def langgraph_index(embedder: Any) -> dict[str, Any]:
    """LangGraph's PostgresStore index config: halomem's embedder, the items' ``text`` field (the
    in-process side and bench.peer_server alike)."""
    return {"dims": embedder.dim, "fields": ["text"], "embed": lambda texts: embedder.embed(list(texts))}


class LangGraphSide:
    name = "langgraph PostgresStore"

    def __init__(self, kernel: Any, ds: Dataset, say: Callable[[str], None]) -> None:
        from langgraph.store.postgres import PostgresStore
        from langgraph.store.base import PutOp

        embedder = kernel.embedder
        self._cm = PostgresStore.from_conn_string(libpq_url(kernel), index=langgraph_index(embedder))
        self.store = self._cm.__enter__()
        self.store.setup()
        for ns, docs in ds.docs.items():
            ops = [PutOp(self._ns(ns), d.id, {"text": d.text}) for d in docs]
            for start in range(0, len(ops), 500):
                self.store.batch(ops[start:start + 500])
            say(f"langgraph: loaded {ns}: {len(docs)} docs")

    @staticmethod
    def _ns(ns: str) -> tuple[str, ...]:
        return tuple(ns.split("/"))

    def search(self, ns: str, query: str) -> list[str]:
        return [item.key for item in self.store.search(self._ns(ns), query=query, limit=EVAL_K)]

    def write(self, ns: str, key: str, text: str) -> None:
        self.store.put(self._ns(ns), key, {"text": text})

    def close(self) -> None:
        self._cm.__exit__(None, None, None)


PEERS = {"langgraph": ("langgraph-checkpoint-postgres", LangGraphSide)}


def run_peers(out_dir: Path, locomo: Path, say: Callable[[str], None], *, conversations: int | None = None,
              questions: int | None = None, writes: int = 200, seed: int = 0, callers: int = 8,
              rounds: int = 2) -> dict[str, Any]:
    from ..ranking_metrics import ndcg_at, recall_at

    ds = load_locomo(locomo, conversations)
    rng = random.Random(seed)
    chosen = [q for q in ds.queries if q.group == "cat1-4"]  # the answerable questions, as bench devsets asks
    rng.shuffle(chosen)
    chosen = chosen[:questions] if questions else chosen
    with ephemeral_kernel("default") as kernel:
        sides: list[Any] = [HalomemSide(kernel, ds, say)]
        versions = {"halomem": _version("halomem"), "embedder": kernel.embedder.name}
        for key, (dist, side) in PEERS.items():
            if _version(dist) is None:
                say(f"{key}: {dist} is not installed; left out")
                continue
            versions[dist] = _version(dist)
            sides.append(side(kernel, ds, say))
        with kernel.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("ANALYZE")
        for side in sides:
            for q in chosen[:WARM]:
                side.search(q.namespace, q.text)
        timing: dict[str, list[float]] = {s.name: [] for s in sides}
        scores: dict[str, dict[str, list[float]]] = {s.name: {"recall@10": [], "ndcg@10": []} for s in sides}
        short = {s.name: 0 for s in sides}
        for n, q in enumerate(chosen, 1):
            order = sides[:]
            rng.shuffle(order)
            for side in order:
                started = time.perf_counter()
                ranked = side.search(q.namespace, q.text)
                timing[side.name].append((time.perf_counter() - started) * 1000)
                scores[side.name]["recall@10"].append(recall_at(ranked, set(q.relevant), EVAL_K))
                scores[side.name]["ndcg@10"].append(ndcg_at(ranked, set(q.relevant), EVAL_K))
                short[side.name] += len(ranked) < EVAL_K
            if n % 200 == 0:
                say(f"searched {n}/{len(chosen)} questions")
        texts = [d.text for docs in ds.docs.values() for d in docs]
        rng.shuffle(texts)
        writing: dict[str, list[float]] = {s.name: [] for s in sides}
        target = next(iter(ds.docs))
        for i, text in enumerate(texts[:writes]):
            order = sides[:]
            rng.shuffle(order)
            for side in order:
                started = time.perf_counter()
                side.write(target + "/writes", f"w{i}", f"{text} (note {i})")
                writing[side.name].append((time.perf_counter() - started) * 1000)
        for side in sides:
            if hasattr(side, "close"):
                side.close()
        load = None
        if callers and len(sides) > 1:  # the server leg (bench.peers_load), where the peer is installed
            from .peers_load import run_load

            load = run_load(kernel, libpq_url(kernel), chosen, callers, rounds, say)
    rows = {}
    base = sides[0].name
    for side in sides:
        name = side.name
        rows[name] = {"recall@10": round(statistics.fmean(scores[name]["recall@10"]), 3),
                      "ndcg@10": round(statistics.fmean(scores[name]["ndcg@10"]), 3),
                      "fewer than k": short[name], "search": _pcts(timing[name]), "write": _pcts(writing[name])}
    for name, row in rows.items():
        if name != base:
            row["halomem / this"] = {f"search {p}": round(rows[base]["search"][p] / row["search"][p], 2)
                                     for p in ("p50", "p95")}
            row["halomem / this"].update({f"write {p}": round(rows[base]["write"][p] / row["write"][p], 2)
                                          for p in ("p50", "p95")})
    result = {"dataset": "locomo", "questions": len(chosen), "memories": ds.doc_count, "namespaces": len(ds.docs), "writes": writes, "k": EVAL_K,
              "versions": versions, "systems": rows, "machine": report.machine(), "over_http": load}
    result["markdown"] = markdown(result)
    report.write(out_dir, "peers", result, result["markdown"])
    return result


REPRODUCE = ("Reproduce: `pip install \"langgraph-checkpoint-postgres>=3.2,<3.3\"` (an optional dev dependency,\n"
             "never a runtime one), then `halomem bench peers --writes 300 --out results/` (about ten minutes, the\n"
             "server leg included; `--callers 0` leaves it out).")


def markdown(result: dict[str, Any]) -> str:
    systems = result["systems"]
    table = report.markdown_table(
        ["system", "R@10", "nDCG@10", "< k hits", "search p50 ms", "search p95 ms", "write p50 ms", "write p95 ms"],
        [[name, r["recall@10"], r["ndcg@10"], r["fewer than k"], r["search"]["p50"], r["search"]["p95"],
          r["write"]["p50"], r["write"]["p95"]] for name, r in systems.items()])
    ratios = [f"- halomem / {name}: search p50 {r['halomem / this']['search p50']}x, p95 "
              f"{r['halomem / this']['search p95']}x; write p50 {r['halomem / this']['write p50']}x, p95 "
              f"{r['halomem / this']['write p95']}x" for name, r in systems.items() if "halomem / this" in r]
    versions = ", ".join(f"{k} {v}" for k, v in result["versions"].items())
    text = (f"# halomem beside its peers\n\nLoCoMo, {result['memories']} memories in {result['namespaces']} "
            f"conversation namespaces, {result['questions']} answerable questions (categories 1-4), k={result['k']}, {result['writes']} single "
            f"writes; one interleaved run, in process, one caller. Versions: {versions}.\n\n{REPRODUCE}\n\n{table}\n\n"
            + "\n".join(ratios) + "\n")
    load = result.get("over_http")
    if load:
        served = load["systems"]
        text += (f"\n## {load['callers']} callers over HTTP\n\nThe same {load['searches_per_leg']} questions per leg, "
                 f"{load['callers']} callers at once, each system behind its server ({load['rounds']} "
                 f"leg{'s' if load['rounds'] > 1 else ''} each, alternated; the median leg by throughput):\n\n" + report.markdown_table(
                     ["system", "searches/s", "p50 ms", "p95 ms", "429s, then retried"],
                     [[name, r["throughput_rps"], r["p50"], r["p95"], r["refused_then_retried"]]
                      for name, r in served.items()]) + "\n")
        *ours, peer = served  # the peer's server is the last
        text += "\n" + "".join(
            f"- {name} / {peer}: throughput {served[name]['throughput_rps'] / served[peer]['throughput_rps']:.2f}x"
            f" (higher is better), p95 {served[name]['p95'] / served[peer]['p95']:.2f}x\n" for name in ours)
    return text
