"""Varied texts the default embedder is held to torch's all-MiniLM-L6-v2 on (tests/test_onnx_embedder.py):
generated org memories and their questions, the repository's own fixtures, long documents past the
256-token window, and odd input (markup, code, other scripts, numbers, control bytes, one word)."""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from halomem.bench import org_concepts, synthetic

FIXTURES = Path(__file__).resolve().parent.parent / "halomem" / "fixtures"
ODD = ["<script>alert(1)</script>", "'; DROP TABLE memories; --", "\u202eevil\u202c text", "🦜🦜 émoji ünïcode 漢字 текст",
       "SELECT count(*) FROM memories WHERE namespace = 'acme/eng';", "def plan(self, q): return []", "3.14159 2.71828 42",
       "x", "the", "ok", "[UNK] [CLS] [SEP] [PAD]", "a" * 3000, "\x00\x01\x1b[31m red", "https://example.com/a?b=c&d=e",
       "Ceci n'est pas une pipe.", "Das Gebäude wurde 1887 fertiggestellt.", "El pago se realiza a treinta días.",
       "東京の天気は晴れです。", "    leading and trailing spaces    ", "UPPERCASE SHOUTING ABOUT THE DEPLOY"]


def parity_texts(n: int = 520) -> list[str]:
    rng = random.Random(2026)
    texts = list(ODD)
    for line in (FIXTURES / "paraphrase" / "facts.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        texts += [row["fact"], row["question"]]
    for path in sorted((FIXTURES / "demo").glob("*.jsonl")):
        texts += [json.loads(line)["content"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    org = org_concepts.generate(memories_per_topic=12)
    texts += [d.text for docs in org.docs.values() for d in docs][:150]
    texts += [c.text for docs in org.concepts.values() for c in docs]
    texts += [q.text for q in org.queries][:40]
    memories = [t for docs in synthetic.corpus(2000).values() for t in docs]
    texts += [q for _, q in synthetic.queries(40)]
    texts = list(dict.fromkeys(texts))
    texts += memories[: max(0, n - 30 - len(texts))]
    for i in range(30):  # long documents: the window cuts them, as torch's max_seq_length does
        texts.append(" ".join(rng.sample(memories, 12 + i % 6)))
    return texts[:n]


def digest(texts: list[str]) -> str:
    """Which texts a reference file's vectors belong to."""
    return hashlib.sha256("\x1e".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
