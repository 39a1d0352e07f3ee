"""Score fusion settings on every dev set at once (docs/bench/fusion.md's candidates table).

    python tools/fusion_candidates.py [--new] BEIR_DIR [BEIR_DIR ...]

Loads LoCoMo, its sessions, org-concepts, the paraphrases and each BEIR folder once (the default
embedder, one ephemeral store each), then scores the shipped drivers, fusion's lanes alone and the
candidate settings below on all of them: one setting is chosen across the sets, never per set.
--new: only `keyword`, the lanes and the latest round of candidates (COSINE_CANDIDATES).
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
# issue 54, with two more public sets (scifact-antonym, cisi): more of the cosine `keyword` leans on
COSINE_CANDIDATES = [(0.57, 0.33, 0.10), (0.52, 0.38, 0.10), (0.47, 0.38, 0.15), (0.45, 0.42, 0.13),
                     (0.42, 0.43, 0.15), (0.40, 0.40, 0.20)]


def main(beir: list[str], only_new: bool = False) -> None:
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

        for name in ("keyword", *LANES) if only_new else ("baseline", "keyword", "graph", "fusion", *LANES):
            score(name, name)
        for label, power, weight in [] if only_new else CANDIDATES:
            score(label, "fusion", FusionDriver(weight, 1 - weight, lexical_power=power))
        for lexical, cosine, covered in COSINE_CANDIDATES if only_new else COVERAGE_CANDIDATES:
            score(f"{lexical:g} / {cosine:g} + coverage {covered:g}", "fusion",
                  FusionDriver(lexical, cosine, coverage_weight=covered))


if __name__ == "__main__":
    main([a for a in sys.argv[1:] if a != "--new"], only_new="--new" in sys.argv)
