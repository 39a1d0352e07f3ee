"""Would a cross-encoder pay? fusion's top DEPTH reordered by the packaged ms-marco-MiniLM-L-12-v2.

    python tools/rerank_candidates.py SET [DEPTH] [TOKENS]

SET: locomo, sessions, org-concepts, paraphrases, or a BEIR folder. Loads it into a scratch store on the default embedder, then scores fusion, keyword and
two rerankings of fusion's top DEPTH (the cross-encoder alone; half cross-encoder, half fusion's own
score, min-max over the DEPTH) with the same evaluation as `halomem bench quality`, and the cross-
encoder's milliseconds per query. Dev only: the measurement behind docs/bench/embed.md's rerank
table; no cartridge ships unless these numbers say it pays.
"""
from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from halomem.bench.harness import ephemeral_kernel, evaluate, load
from halomem.drivers.fusion import FusionDriver
from halomem.embed.packaged import MS_MARCO_RERANKER


class CrossEncoder:
    """The packaged export, one (query, passage) pair per call: it is dynamically quantized too."""

    def __init__(self, tokens: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model, tokenizer = MS_MARCO_RERANKER.files()
        options = ort.SessionOptions()
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(tokens)

    def scores(self, query: str, passages: list[str]) -> np.ndarray:
        out = []
        for passage in passages:
            encoded = self._tokenizer.encode(query, passage)
            feed = {"input_ids": np.array([encoded.ids]), "attention_mask": np.ones((1, len(encoded.ids)), np.int64),
                    "token_type_ids": np.array([encoded.type_ids])}
            out.append(float(self._session.run(None, feed)[0][0, 0]))
        return np.array(out)


class Reranked:
    """fusion's top ``depth`` reordered by ``blend`` x the cross-encoder's probability + the rest x fusion's."""

    def __init__(self, encoder: CrossEncoder, depth: int, blend: float) -> None:
        self.name = f"fusion + cross-encoder top {depth}" + ("" if blend == 1 else f" (blend {blend})")
        self._base, self._encoder, self._depth, self._blend = FusionDriver(), encoder, depth, blend
        self.ms: list[float] = []

    def capabilities(self):  # noqa: ANN201
        return self._base.capabilities()

    def plan(self, q):  # noqa: ANN001, ANN201
        refs = self._base.plan(dataclasses.replace(q, k=max(q.k, self._depth)))
        head, tail = refs[:self._depth], refs[self._depth:]
        if len(head) < 2:
            return refs[:q.k]
        started = time.perf_counter()
        probability = 1 / (1 + np.exp(-self._encoder.scores(q.query, [r.content for r in head])))
        self.ms.append((time.perf_counter() - started) * 1000)
        own = np.array([r.score for r in head])
        own = (own - own.min()) / (own.max() - own.min() + 1e-9)
        order = np.argsort(-(self._blend * probability + (1 - self._blend) * own), kind="stable")
        return ([head[i] for i in order] + tail)[:q.k]


def main(name: str, depth: int = 10, tokens: int = 256) -> None:
    from halomem.cli.bench_cmds import _dataset

    ds = _dataset("beir", Path(name)) if Path(name).is_dir() else _dataset(name, None)
    encoder = CrossEncoder(tokens)
    candidates = {r.name: r for r in (Reranked(encoder, depth, 1.0), Reranked(encoder, depth, 0.5))}
    with ephemeral_kernel("default") as kernel:
        to_doc = load(kernel, ds)
        for run in evaluate(kernel, ds, to_doc, ["fusion", "keyword", *candidates], instances=candidates):
            extra = candidates.get(run.driver)
            cost = f" | {statistics.median(extra.ms):.0f}" if extra and extra.ms else " | "
            print(f"| {ds.name} | {run.driver} | {run.headline['nDCG@10']:.3f} | {run.p50_ms:.1f}{cost} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]))
