"""Score fusion settings on every dev set at once (docs/bench/fusion.md's candidates table).

    python tools/fusion_candidates.py BEIR_DIR [BEIR_DIR ...]

Loads LoCoMo, its sessions, org-concepts, the paraphrases and each BEIR folder once (the default
embedder, one ephemeral store each), then scores the shipped drivers, fusion's lanes alone and the
candidate settings below on all of them: one setting is chosen across the sets, never per set.
"""
from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from halomem.bench.datasets import load_beir, load_locomo, load_paraphrases, locomo_sessions
from halomem.bench.harness import LANES, ephemeral_kernel, evaluate, load
from halomem.bench.org_concepts import generate
from halomem.cli.bench_cmds import DEFAULT_LOCOMO, DEFAULT_PARAPHRASES
from halomem.drivers.fusion import FusionDriver

CANDIDATES = [(f"(s/(s+M))^{p:g}, {w:g} / {1 - w:g}", p, w)
              for p in (2, 1, 1.5) for w in (0.75, 0.65, 0.6, 0.5, 0.4) if p == 2 or w in (0.75, 0.6, 0.5)]
# a third lane, query-term coverage (retrieval.coverage), weighed beside the shipped two
# (lexical, cosine, coverage), each setting's weights summing to 1: docs/bench/fusion.md
COVERAGE_CANDIDATES = [(0.72, 0.28, 0.1), (0.72, 0.28, 0.2), (0.72, 0.28, 0.3), (0.62, 0.28, 0.10),
                       (0.52, 0.28, 0.20), (0.57, 0.33, 0.10), (0.52, 0.33, 0.15), (0.67, 0.28, 0.05)]
# coverage with the query's adjacent word pairs (retrieval.coverage's pair_share of the lane):
# (lexical, cosine, coverage, pair share)
PAIR_CANDIDATES = [(0.57, 0.33, 0.10, 0.5), (0.57, 0.33, 0.10, 0.3), (0.52, 0.33, 0.15, 0.5),
                   (0.57, 0.33, 0.15, 0.5), (0.55, 0.35, 0.15, 0.5), (0.57, 0.33, 0.12, 0.7),
                   (0.52, 0.38, 0.15, 0.5), (0.50, 0.35, 0.20, 0.5), (0.55, 0.35, 0.15, 0.6)]


def main(beir: list[str]) -> None:
    locomo = load_locomo(DEFAULT_LOCOMO)
    sets = [locomo, locomo_sessions(locomo), generate(), load_paraphrases(DEFAULT_PARAPHRASES),
            *(load_beir(Path(b)) for b in beir)]
    with contextlib.ExitStack() as stack:
        stores = []
        for ds in sets:
            kernel = stack.enter_context(ephemeral_kernel("default"))
            stores.append((kernel, ds, load(kernel, ds)))
            print(f"loaded {ds.name}", file=sys.stderr, flush=True)

        def score(label: str, name: str, driver=None) -> None:  # noqa: ANN001
            row = {}
            for kernel, ds, to_doc in stores:
                [run] = evaluate(kernel, ds, to_doc, [name], {name: driver} if driver else None)
                row[ds.name] = round(run.headline["nDCG@10"], 4)
            row["mean"] = round(sum(row.values()) / len(row), 4)
            print(json.dumps({"setting": label, **row}), flush=True)

        for name in ("baseline", "keyword", "graph", "fusion", *LANES):
            score(name, name)
        for label, power, weight in CANDIDATES:
            score(label, "fusion", FusionDriver(weight, 1 - weight, lexical_power=power, coverage_weight=0.0))
        for lexical, cosine, covered in COVERAGE_CANDIDATES:
            score(f"{lexical:g} / {cosine:g} + coverage {covered:g}", "fusion",
                  FusionDriver(lexical, cosine, coverage_weight=covered, pair_share=0.0))
        for lexical, cosine, covered, pairs in PAIR_CANDIDATES:
            score(f"{lexical:g} / {cosine:g} + coverage {covered:g}, pairs {pairs:g}", "fusion",
                  FusionDriver(lexical, cosine, coverage_weight=covered, pair_share=pairs))


if __name__ == "__main__":
    main(sys.argv[1:])
