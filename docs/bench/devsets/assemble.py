"""Assemble the two public BEIR-format dev sets of docs/bench/devsets.md from a checkout of
github.com/nice-hku-coder/coder_data (commit a8f2ddf): `python assemble.py CHECKOUT OUT`.

- scifact-2101: SciFact (Wadden et al., 2020) abstracts and claims. The checkout's full corpus is
  too large for the stored copy, so the corpus is the 2,101 SciFact abstracts of
  `scifact_antonym/corpus_candidate.jsonl`, and the queries are the claims of
  `scifact/claim_contradict_topic_relevant.jsonl` whose cited abstracts all lie in it; relevant =
  the cited abstracts (SciFact's own BEIR qrels are the cited evidence abstracts).
- negconstraint: `NegConstraint_labeled/` as shipped (corpus.jsonl, queries.jsonl, qrels/test.tsv).
"""
import json
import shutil
import sys
from pathlib import Path


def scifact(src: Path, out: Path) -> tuple[int, int]:
    docs = {}
    for line in (src / "scifact_antonym/corpus_candidate.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        docs[str(row["doc_id"])] = row["text"]
    claims = [json.loads(line) for line in (src / "scifact/claim_contradict_topic_relevant.jsonl")
              .read_text(encoding="utf-8").splitlines()]
    kept = [c for c in claims if c["cited_doc_ids"] and all(str(d) in docs for d in c["cited_doc_ids"])]
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    (out / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n"
                                              for i, t in docs.items()), encoding="utf-8")
    (out / "queries.jsonl").write_text("".join(json.dumps({"_id": str(c["id"]), "text": c["claim"]}) + "\n"
                                               for c in kept), encoding="utf-8")
    (out / "qrels/test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{c['id']}\t{d}\t1\n" for c in kept for d in c["cited_doc_ids"]), encoding="utf-8")
    return len(docs), len(kept)


def negconstraint(src: Path, out: Path) -> None:
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        shutil.copyfile(src / "NegConstraint_labeled" / name, out / name)


if __name__ == "__main__":
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    print("scifact-2101: %d abstracts, %d claims" % scifact(source, target / "scifact-2101"))
    negconstraint(source, target / "negconstraint")
