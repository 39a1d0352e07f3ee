"""Assemble the two public BEIR-format dev sets of docs/bench/devsets.md from a checkout of
github.com/nice-hku-coder/coder_data (commit a8f2ddf): `python assemble.py CHECKOUT OUT`.

- scifact-2101: SciFact (Wadden et al., 2020) abstracts and claims. The checkout's full corpus is
  too large for the stored copy, so the corpus is the 2,101 SciFact abstracts of
  `scifact_antonym/corpus_candidate.jsonl`, and the queries are the claims of
  `scifact/claim_contradict_topic_relevant.jsonl` whose cited abstracts all lie in it; relevant =
  the cited abstracts (SciFact's own BEIR qrels are the cited evidence abstracts).
- negconstraint: `NegConstraint_labeled/` as shipped (corpus.jsonl, queries.jsonl, qrels/test.tsv).
- scifact-antonym: `scifact_antonym/` (SciFact passages; paired queries that differ by one word and
  its antonym, and a copy of the passage with that word flipped): relevant = the passage that
  satisfies the query's wording (graded 2 there); the flipped copy and the topical ones are not.
- cisi: the CISI test collection (University of Glasgow IR group; 1,460 library-science abstracts,
  queries with judgements) as `CISI_simplified.ALL/.QRY/.REL` in a checkout of
  github.com/glaucapicea/ir-model-evaluation (commit 74a42c6, `collections/`; the files' MD5s match
  that README's): `python assemble.py --cisi COLLECTIONS_DIR OUT`.
"""
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path


def write_beir(out: Path, docs: dict[str, str], queries: dict[str, str], relevant: list[tuple[str, str]]) -> None:
    """A BEIR folder: corpus.jsonl, queries.jsonl and qrels/test.tsv (every pair relevant, score 1)."""
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    (out / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n"
                                              for i, t in docs.items()), encoding="utf-8")
    (out / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n"
                                               for i, t in queries.items()), encoding="utf-8")
    (out / "qrels/test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t1\n" for q, d in relevant), encoding="utf-8")


def scifact(src: Path, out: Path) -> tuple[int, int]:
    docs = {}
    for line in (src / "scifact_antonym/corpus_candidate.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        docs[str(row["doc_id"])] = row["text"]
    claims = [json.loads(line) for line in (src / "scifact/claim_contradict_topic_relevant.jsonl")
              .read_text(encoding="utf-8").splitlines()]
    kept = [c for c in claims if c["cited_doc_ids"] and all(str(d) in docs for d in c["cited_doc_ids"])]
    write_beir(out, docs, {str(c["id"]): c["claim"] for c in kept},
               [(c["id"], d) for c in kept for d in c["cited_doc_ids"]])
    return len(docs), len(kept)


def negconstraint(src: Path, out: Path) -> None:
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        shutil.copyfile(src / "NegConstraint_labeled" / name, out / name)


def scifact_antonym(src: Path, out: Path) -> tuple[int, int]:
    folder = src / "scifact_antonym"
    docs = [json.loads(line) for line in (folder / "corpus_antonym.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = [json.loads(line) for line in (folder / "queries_antonym.jsonl").read_text(encoding="utf-8").splitlines()]
    write_beir(out, {d["doc_id"]: d["text"] for d in docs}, {q["query_id"]: q["query"] for q in queries},
               [(q["query_id"], d) for q in queries for d in q["constraint_satisfying_doc_ids"]])
    return len(docs), len(queries)


CISI_MD5 = {"ALL": "8da4909b75f9ca88531e1d6e6a0a76f6", "QRY": "b7eca0602e510ae3513428db80dcf876",
            "REL": "66191983b1815ea6b61b9773684ed405"}


def _smart_records(text: str) -> dict[str, str]:
    """SMART-format records (`.I id`, then `.W` and the text) as {id: text}."""
    records = {}
    for block in re.split(r"^\.I\s+", text, flags=re.M)[1:]:
        ident, _, rest = block.partition("\n")
        records[ident.strip()] = " ".join(rest.replace(".W", " ", 1).split())
    return records


def cisi(src: Path, out: Path) -> tuple[int, int]:
    files = {ext: (src / f"CISI_simplified.{ext}").read_bytes() for ext in CISI_MD5}
    for ext, data in files.items():
        if hashlib.md5(data).hexdigest() != CISI_MD5[ext]:
            raise SystemExit(f"CISI_simplified.{ext} is not the file these results were measured on")
    docs, queries = _smart_records(files["ALL"].decode()), _smart_records(files["QRY"].decode())
    pairs = [tuple(line.split()) for line in files["REL"].decode().splitlines() if line.strip()]
    judged = sorted({q for q, _ in pairs}, key=int)
    write_beir(out, docs, {q: queries[q] for q in judged}, pairs)
    return len(docs), len(judged)


if __name__ == "__main__":
    if sys.argv[1] == "--cisi":
        print("cisi: %d abstracts, %d queries" % cisi(Path(sys.argv[2]), Path(sys.argv[3]) / "cisi"))
        raise SystemExit(0)
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    print("scifact-2101: %d abstracts, %d claims" % scifact(source, target / "scifact-2101"))
    negconstraint(source, target / "negconstraint")
    print("scifact-antonym: %d passages, %d queries" % scifact_antonym(source, target / "scifact-antonym"))
