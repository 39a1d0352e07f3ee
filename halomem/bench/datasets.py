"""Benchmark datasets as one shape: namespaces of docs, queries with relevant doc ids and a group.

LoCoMo: each dialogue turn is a memory ("[session date] speaker: text"), one namespace per
conversation, each question a query whose relevant set is its evidence turn ids; LoCoMo sessions:
each session one long document. Paraphrases: one-line facts asked in other words. BEIR: the
standard corpus.jsonl / queries.jsonl / qrels/*.tsv layout, in one namespace.
"""
from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InvalidInputError

_DIA_ID = re.compile(r"D(\d+):(\d+)")
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass(frozen=True)
class Doc:
    id: str
    text: str
    source: str | None = None  # stored as the memory's source (LoCoMo: the conversation session)
    turn: dict | None = None  # a conversation's turn as a chat file holds it (intake.chat), for --via chat


@dataclass(frozen=True)
class Query:
    id: str
    namespace: str
    text: str
    relevant: frozenset[str]
    group: str


@dataclass
class Dataset:
    name: str
    docs: dict[str, list[Doc]] = field(default_factory=dict)  # namespace -> docs
    queries: list[Query] = field(default_factory=list)
    entities: dict[str, list[str]] = field(default_factory=dict)  # namespace -> entity names
    # namespace -> L3 concepts (Doc.source is the concept's path); a query may name one as relevant
    concepts: dict[str, list[Doc]] = field(default_factory=dict)
    skipped_queries: int = 0
    skipped_docs: int = 0  # documents with no text (a memory needs some): left out, and said so

    @property
    def doc_count(self) -> int:
        return sum(len(d) for d in self.docs.values())


def normalize_evidence(evidence: list[str]) -> set[str]:
    """'D8:6; D9:17', 'D9:1 D4:4', 'D30:05' -> {'D8:6', 'D9:17', ...}."""
    out = set()
    for item in evidence:
        for a, b in _DIA_ID.findall(str(item)):
            out.add(f"D{int(a)}:{int(b)}")
    return out


def load_locomo(path: Path, limit_conversations: int | None = None) -> Dataset:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"cannot read LoCoMo data {path}: {exc}") from None
    ds = Dataset("locomo")
    for conv in data[:limit_conversations]:
        ns = f"locomo/{conv['sample_id']}"
        c = conv["conversation"]
        docs = []
        session = 1
        while f"session_{session}" in c:
            date = c.get(f"session_{session}_date_time", "")
            for turn in c[f"session_{session}"]:
                said = turn["text"] + (f" (shares a photo: {turn['blip_caption']})" if turn.get("blip_caption") else "")
                text = f"[{date}] {turn['speaker']}: {said}"
                dia = normalize_evidence([turn["dia_id"]])
                if dia:
                    docs.append(Doc(dia.pop(), text, f"locomo:{conv['sample_id']}/session_{session}",
                                    {"session": f"{conv['sample_id']}/session_{session}", "time": date or None,
                                     "speaker": turn["speaker"], "content": said}))
            session += 1
        ds.docs[ns] = docs
        ds.entities[ns] = [c["speaker_a"], c["speaker_b"]]
        known = {d.id for d in docs}
        for i, qa in enumerate(conv["qa"]):
            relevant = normalize_evidence(qa.get("evidence", [])) & known
            if not relevant or not qa.get("question"):
                ds.skipped_queries += 1
                continue
            category = int(qa["category"])
            group = "cat5" if category == 5 else "cat1-4"
            ds.queries.append(Query(f"{conv['sample_id']}#{i}", ns, qa["question"], frozenset(relevant), group))
    return ds


def locomo_sessions(ds: Dataset) -> Dataset:
    """LoCoMo's sessions as long documents in one namespace; a question's relevant set is the
    sessions holding its evidence (cat1-4 only)."""
    out = Dataset("locomo-sessions")
    by_session: dict[str, list[Doc]] = {}
    session_of: dict[tuple[str, str], str] = {}
    for ns, docs in ds.docs.items():
        for d in docs:
            by_session.setdefault(d.source or "", []).append(d)
            session_of[(ns, d.id)] = d.source or ""
    out.docs["sessions"] = [Doc(s, "\n".join(d.text for d in turns), s) for s, turns in by_session.items()]
    for q in ds.queries:
        if q.group == "cat1-4":
            out.queries.append(Query(q.id, "sessions", q.text,
                                     frozenset(session_of[(q.namespace, r)] for r in q.relevant), q.group))
    return out


def load_paraphrases(path: Path, namespace: str = "acme/eng") -> Dataset:
    """One-line facts, each asked in other words (JSONL: fact, question): one memory per fact, its
    question the query whose one relevant memory it is (halomem/fixtures/paraphrase/facts.jsonl)."""
    try:
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
        pairs = [(str(r["fact"]), str(r["question"])) for r in rows]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(f"cannot read paraphrase facts {path}: {exc}") from None
    ds = Dataset("paraphrases")
    ds.docs[namespace] = [Doc(f"fact-{i}", fact) for i, (fact, _) in enumerate(pairs)]
    ds.queries = [Query(f"q-{i}", namespace, question, frozenset({f"fact-{i}"}), "all")
                  for i, (_, question) in enumerate(pairs)]
    return ds


def load_beir(directory: Path, split: str = "test", namespace: str = "beir") -> Dataset:
    """A BEIR-format collection: corpus.jsonl (_id, title, text), queries.jsonl (_id, text), qrels/SPLIT.tsv."""
    directory = Path(directory)
    try:
        corpus = [json.loads(line) for line in (directory / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
                  if line.strip()]
        queries = {q["_id"]: q["text"] for q in (json.loads(line) for line in
                   (directory / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line.strip())}
        qrels: dict[str, set[str]] = {}
        with (directory / "qrels" / f"{split}.tsv").open(encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, delimiter="\t")
            for row in reader:
                if len(row) < 3 or row[0] == "query-id":
                    continue
                if float(row[2]) > 0:
                    qrels.setdefault(row[0], set()).add(row[1])
    except (OSError, ValueError, KeyError) as exc:
        raise InvalidInputError(f"cannot read BEIR collection {directory}: {exc}") from None
    ds = Dataset(directory.name or "beir")
    docs = [Doc(str(d["_id"]), " ".join(x for x in (d.get("title"), d.get("text")) if isinstance(x, str) and x.strip()))
            for d in corpus]
    ds.docs[namespace] = [d for d in docs if d.text.strip()]
    ds.skipped_docs = len(docs) - len(ds.docs[namespace])
    known = {d.id for d in ds.docs[namespace]}
    for qid, relevant in sorted(qrels.items()):
        relevant &= known
        if qid not in queries or not relevant:
            ds.skipped_queries += 1
            continue
        ds.queries.append(Query(qid, namespace, queries[qid], frozenset(relevant), "all"))
    return ds
