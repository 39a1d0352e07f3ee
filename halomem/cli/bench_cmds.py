"""halomem bench quality | latency | ingest | embed | serve | isolation | cli: reproducible reports
under a results folder."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ..errors import InvalidInputError
from .common import JsonOption, emit_json, err, out

app = typer.Typer(no_args_is_help=True, help="Benchmarks (speed and quality goals live here, not in unit tests).")
DEFAULT_LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo10.json"
DEFAULT_PARAPHRASES = Path(__file__).resolve().parents[1] / "fixtures" / "paraphrase" / "facts.jsonl"
OutOption = typer.Option(Path("bench-results"), "--out", help="Results folder (markdown, JSON, PNG).")


def _split_ints(text: str) -> list[int]:
    try:
        values = [int(v.replace("_", "")) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InvalidInputError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise InvalidInputError("sizes must be positive integers")
    return values


def _say(message: str) -> None:
    err.print(message, markup=False)


def _finish(result: dict, as_json: bool) -> None:
    if as_json:
        emit_json({k: v for k, v in result.items() if k != "markdown"})
    else:
        out.print(result["markdown"], markup=False)


def _dataset(name: str, path: Optional[Path], conversations: Optional[int] = None):  # noqa: ANN202 - a Dataset
    from ..bench.datasets import load_beir, load_locomo, load_paraphrases, locomo_sessions

    if name in ("locomo", "sessions"):
        ds = load_locomo(path or DEFAULT_LOCOMO, conversations)
        return locomo_sessions(ds) if name == "sessions" else ds
    if name == "beir":
        if path is None:
            raise InvalidInputError("--dataset beir needs --path to a BEIR collection folder")
        return load_beir(path)
    if name == "org-concepts":
        from ..bench.org_concepts import generate

        return generate()
    if name == "paraphrases":
        return load_paraphrases(path or DEFAULT_PARAPHRASES)
    raise InvalidInputError(f"unknown dataset {name!r} (locomo, sessions, org-concepts, paraphrases, beir)")


@app.command()
def quality(dataset: str = typer.Option("locomo", help="locomo, sessions (LoCoMo's sessions as documents), "
                                        "org-concepts (generated), paraphrases, or beir (with --path)."),
            path: Optional[Path] = typer.Option(None, help="Data file (LoCoMo JSON, paraphrase JSONL) or BEIR folder."),
            embedder: List[str] = typer.Option(["default"], "--embedder",
                                               help="Repeatable: default (a new store's), onnx, bge, static, hash, minilm, openai:MODEL."),
            driver: List[str] = typer.Option(["baseline", "fusion", "graph", "keyword"], "--driver", help="Repeatable."),
            lanes: bool = typer.Option(False, "--lanes", help="Also fusion's BM25 and vector lanes alone."),
            conversations: Optional[int] = typer.Option(None, help="Only the first N LoCoMo conversations."),
            via: List[str] = typer.Option(["direct"], "--via", help="Repeatable: direct (the dataset's texts as "
                                          "they are), chat (LoCoMo's turns through `halomem ingest --format chat`)."),
            out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """R@5, R@10, nDCG@10, MRR@10 per driver, group and embedder."""
    from ..bench.harness import LANES
    from ..bench.quality import run_quality

    ds = _dataset(dataset, path, conversations)
    if any(v not in ("direct", "chat") for v in via):
        raise InvalidInputError("--via is direct or chat")
    _finish(run_quality(ds, embedder, [*driver, *(LANES if lanes else ())], out_dir, _say, via), as_json)


@app.command()
def calibration(dataset: List[str] = typer.Option(["locomo", "sessions", "org-concepts", "paraphrases"], "--dataset",
                                                  help="Repeatable: the dev sets (as bench quality names them)."),
                driver: List[str] = typer.Option(["baseline", "fusion", "graph", "keyword"], "--driver",
                                                 help="Repeatable."),
                embedder: str = typer.Option("default", help="The store's embedder (default: a new store's)."),
                conversations: Optional[int] = typer.Option(None, help="Only the first N LoCoMo conversations."),
                refit: bool = typer.Option(False, "--fit", help="Report with coefficients fit on these hits instead "
                                           "of the shipped ones (halomem.relevance)."),
                out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """Whether a hit's score means what it says on each dev set and driver: hits per score band and
    the share relevant, calibration error (also fit without the set), what the tail cut removes."""
    from ..bench.calibration import run_calibration

    sets = [_dataset(name, None, conversations) for name in dataset]
    _finish(run_calibration(sets, driver, out_dir, embedder=embedder, refit=refit, progress=_say), as_json)


@app.command()
def latency(memories: str = typer.Option("10000,100000", help="Comma-separated sizes of the short corpus."),
            long: str = typer.Option("", "--long", help="Comma-separated sizes of the long-document corpus."),
            corpus: str = typer.Option("short", help="short, long, or short,long."),
            driver: List[str] = typer.Option(["baseline", "fusion", "graph", "keyword"], "--driver",
                                             help="Repeatable: the drivers timed."),
            queries: int = typer.Option(100, help="Probe queries per size."),
            as_of: bool = typer.Option(False, "--as-of", help="Instead: plan() as of a past instant vs the present, "
                                       "30% of the short corpus superseded since (latency-as-of.md)."),
            out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """plan() p50/p95/p99 per driver vs the raw HNSW + GIN floor, on short and long documents."""
    from ..bench.latency import run_latency

    if as_of:
        from ..bench.as_of_latency import run_as_of_latency

        _finish(run_as_of_latency(_split_ints(memories), driver, out_dir, queries, _say), as_json)
        return

    kinds = [k.strip() for k in corpus.split(",") if k.strip()]
    unknown = set(kinds) - {"short", "long"}
    if unknown or not kinds:
        raise InvalidInputError(f"--corpus takes short, long or short,long, not {corpus!r}")
    sizes = {"short": _split_ints(memories), "long": _split_ints(long or "20000")}
    corpora = [(kind, sizes[kind]) for kind in kinds]
    _finish(run_latency(sizes["short"], driver, out_dir, queries, _say, corpora=corpora), as_json)


@app.command()
def profile(memories: int = typer.Option(10000, "--memories", min=1, help="Memories in the store searched."),
            searches: int = typer.Option(200, "--searches", min=20, help="Searches per caller per leg."),
            out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """Where a search's time goes, step by step (policy, embed, plan, view, materialise, audit, edge),
    in process and over HTTP at 1 and 8 concurrent callers."""
    from ..bench.profile import run_profile

    _finish(run_profile(memories, searches, out_dir, _say), as_json)


@app.command()
def backup(memories: int = typer.Option(100000, "--memories", min=1, help="Memories in the store backed up."),
           out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """db backup and db restore of a store of N memories into an empty server: seconds, size, same answers."""
    from ..bench.backup_speed import run_backup

    _finish(run_backup(memories, out_dir, _say), as_json)


@app.command()
def ingest(rows: int = typer.Option(20000, help="Rows to ingest."),
           embedder: List[str] = typer.Option(["hash"], "--embedder", help="Repeatable: the embedders measured."),
           out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """Bulk ingest memories/s vs raw COPY of the same rows."""
    from ..bench.ingest_speed import run_ingest

    _finish(run_ingest(_split_ints(str(rows))[0], embedder, out_dir, _say), as_json)


@app.command()
def documents(files: int = typer.Option(1000, "--files", min=1, help="Markdown files of ~1,500 characters."),
              embedder: str = typer.Option("default", help="The store's embedder (default: a new store's)."),
              rounds: int = typer.Option(3, "--rounds", min=1, help="Rounds of the three legs (medians)."),
              out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """A folder of Markdown files through `halomem ingest DIR`: against the embedder alone on the same
    texts, and the re-run of the unchanged folder."""
    from ..bench.documents_speed import run_documents

    _finish(run_documents(files, embedder, out_dir, _say, rounds), as_json)


@app.command()
def consolidation(embedder: List[str] = typer.Option(["default", "static", "hash"], "--embedder",
                                                     help="Repeatable: the embedders whose vectors are scored."),
                  facts: int = typer.Option(120, "--facts", min=10, help="Base facts of the generated set."),
                  out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """Near-copy detection (write.consolidate) on a generated set of paraphrased copies and distinct
    facts: precision and recall for each pair of thresholds."""
    from ..bench.consolidation import run_consolidation

    _finish(run_consolidation(embedder, out_dir, _say, facts), as_json)


@app.command()
def embed(embedder: List[str] = typer.Option(["onnx", "static", "hash"], "--embedder",
                                             help="Repeatable: onnx, bge, static, hash, minilm, onnx:DIR, openai:MODEL."),
          path: Optional[Path] = typer.Option(None, help="LoCoMo JSON."),
          dev_sets: bool = typer.Option(False, "--dev-sets", help="Also org-concepts and the paraphrases."),
          beir: List[Path] = typer.Option([], "--beir", help="Repeatable: a BEIR folder scored as well."),
          out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """Per embedder: install size, load time, query latency, ingest rate, LoCoMo quality, long documents
    with and without passages; with --dev-sets and --beir, quality on every dev set."""
    from ..bench.datasets import load_beir, load_paraphrases
    from ..bench.embed import run_embed

    more = [load_beir(folder) for folder in beir]
    if dev_sets:
        from ..bench.org_concepts import generate

        more = [generate(), load_paraphrases(DEFAULT_PARAPHRASES), *more]
    _finish(run_embed(embedder, path or DEFAULT_LOCOMO, out_dir, _say, more_sets=more), as_json)


@app.command()
def serve(memories: int = typer.Option(100_000, help="Corpus size."),
          clients: str = typer.Option("1,4,16", help="Comma-separated concurrency levels."),
          requests: int = typer.Option(400, help="Searches per leg."),
          replica: bool = typer.Option(False, "--replica", help="Instead: primary only vs primary + one streaming "
                                       "replica (PostgreSQL 16 from the wheel), at 1 and 16 clients by default."),
          noisy: bool = typer.Option(False, "--noisy", help="Instead: one organisation's search p50/p95 idle, "
                                     "while another's principal floods (REST + MCP threads), and while it sends "
                                     "maximal batches (the store's default embedder; 10,000 memories by default)."),
          flood_threads: int = typer.Option(6, "--flood-threads", min=1, help="--noisy: the flooding threads."),
          trail: int = typer.Option(60_000, "--trail", min=0, help="--noisy: audit rows behind the admin-reads leg."),
          serve_option: List[str] = typer.Option([], "--serve-option", help="--noisy: an option for the `halomem "
                                                 "serve` it starts (repeatable), e.g. --serve-option=--in-flight=0."),
          costs: bool = typer.Option(False, "--costs", help="Instead: what recording each search's refs in the "
                                     "audit, and a shadow arm, add to a search (in-process; 10,000 memories)."),
          out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """Search over HTTP vs in-process Kernel.search at 1/4/16 clients; remote vs local CLI. With
    --replica: the same over one primary and over a primary with a read replica. With --noisy: is
    one caller slowed by another's flood? With --costs: what the audit's record and a shadow cost."""
    if costs:
        from ..bench.search_costs import run_search_costs

        _finish(run_search_costs(memories if memories != 100_000 else 10_000, requests, out_dir, _say), as_json)
        return
    if noisy:
        from ..bench.noisy import run_noisy

        size = memories if memories != 100_000 else 10_000
        _finish(run_noisy(size, requests if requests != 400 else 200, flood_threads, out_dir, _say,
                          tuple(serve_option), trail), as_json)
        return
    if replica:
        from ..bench.replica import run_replica

        levels = _split_ints(clients) if clients != "1,4,16" else [1, 16]
        _finish(run_replica(memories, levels, requests, out_dir, progress=_say), as_json)
        return
    from ..bench.serve import run_serve

    _finish(run_serve(memories, _split_ints(clients), requests, out_dir, _say), as_json)


@app.command()
def isolation(driver: List[str] = typer.Option(["baseline", "fusion", "graph", "keyword"], "--driver",
                                              help="Repeatable: the drivers run in-process and in their sandbox."),
              queries: Optional[int] = typer.Option(None, help="Only the first N LoCoMo questions."),
              embedder: str = typer.Option("hash", help="hash or minilm."),
              path: Optional[Path] = typer.Option(None, help="LoCoMo JSON."),
              out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """plan() p50/p95 per driver in-process vs in a sandboxed worker, and identical rankings."""
    from ..bench.datasets import load_locomo
    from ..bench.isolation import run_isolation

    _finish(run_isolation(load_locomo(path or DEFAULT_LOCOMO), driver, out_dir, queries, embedder, _say), as_json)


@app.command("cli")
def cli_speed(repeats: int = typer.Option(5, help="Runs of each case, interleaved."), out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """Wall time of `halomem search` as a fresh process, server running vs not."""
    from ..bench.cli_speed import run_cli

    _finish(run_cli(repeats, out_dir, _say), as_json)


@app.command()
def peers(conversations: Optional[int] = typer.Option(None, help="Only the first N LoCoMo conversations."),
          questions: Optional[int] = typer.Option(None, help="Only N questions (a seeded sample)."),
          writes: int = typer.Option(200, "--writes", min=1, help="Single writes per system."),
          locomo: Optional[Path] = typer.Option(None, "--locomo", help="LoCoMo's JSON (default: the shared copy)."),
          callers: int = typer.Option(8, "--callers", min=0, help="Concurrent callers of the server leg (0: no "
                                      "server leg)."),
          out_dir: Path = OutOption, as_json: bool = JsonOption) -> None:
    """halomem beside LangGraph's PostgresStore (where installed) on LoCoMo: quality, search and write
    latency, one interleaved run on one embedded PostgreSQL with one embedder; then both behind their
    servers at N concurrent callers over HTTP."""
    from ..bench.peers import run_peers

    _finish(run_peers(out_dir, locomo or DEFAULT_LOCOMO, _say, conversations=conversations, questions=questions,
                      writes=writes, callers=callers), as_json)
