"""An embedder's noise floor: the cosine it gives texts that share nothing.

Embedders differ in what an unrelated pair scores (hash: about 0.1; a static table: about 0.3; a
transformer: about 0.1), so no single cosine says "this matched nothing". Each embedder in use is
asked once per process for the vectors of sentences on unrelated topics; the floor is the 90th
percentile of their pairwise cosines (an embedder may ask for a higher one: a transformer's cosines
between unrelated sentences have a long tail, 0.14 at the 90th percentile and 0.22 at the top for
all-MiniLM-L6-v2, and its 95th keeps a nonsense word or an unrelated topic below the floor while a
paraphrase stays above). Drivers read it from the view (view.similarity_floor()) and do not return
a vector-only hit below it to fill k.

An embedder whose floor is known in advance says so (``calibrated_floor``: the shipped encoder's,
held to what measuring gives by tests/test_onnx_embedder.py), so a one-shot CLI process does not
embed sixteen sentences (about 30 ms) to learn it again.
"""
from __future__ import annotations

import threading
from typing import Any

UNRELATED = (
    "The recipe calls for two cups of flour and a pinch of salt.",
    "Quarterly revenue grew eight percent in the northern region.",
    "The cat slept on the warm windowsill all afternoon.",
    "Install the package with pip and restart the server.",
    "The river flooded the lower fields after the storm.",
    "She practised the violin concerto every evening.",
    "Parliament passed the budget after a long debate.",
    "The hiking trail climbs steeply to the glacier lake.",
    "Vaccines train the immune system to recognise a pathogen.",
    "The striker scored twice in the second half.",
    "Our flight to Lisbon was delayed by three hours.",
    "The museum reopened its gallery of ancient coins.",
    "Photosynthesis turns sunlight into chemical energy.",
    "The landlord raised the rent by fifty dollars.",
    "A leaking tap wastes thousands of litres a year.",
    "He repaired the bicycle chain with a borrowed tool.",
)
PERCENTILE = 0.9
TRANSFORMER_PERCENTILE = 0.95  # onnx and minilm (one model): see above

_floors: dict[str, float] = {}
_lock = threading.Lock()


def declared_floor(embedder: Any) -> float | None:
    """The floor the embedder knows in advance (``calibrated_floor``), or None: it must be measured."""
    declared = getattr(embedder, "calibrated_floor", None)
    return None if declared is None else float(declared)


def noise_floor(embedder: Any) -> float:
    """The embedder's declared floor, else the measured one (cached by name)."""
    declared = declared_floor(embedder)
    if declared is not None:
        return declared
    name = getattr(embedder, "name", "")
    with _lock:
        if name in _floors:
            return _floors[name]
    floor = measured_floor(embedder)
    with _lock:
        _floors[name] = floor
    return floor


def measured_floor(embedder: Any) -> float:
    """The 90th (or the embedder's own) percentile cosine between the UNRELATED sentences."""
    vectors = embedder.embed(list(UNRELATED))
    cosines = sorted(sum(a * b for a, b in zip(vectors[i], vectors[j]))
                     for i in range(len(vectors)) for j in range(i + 1, len(vectors)))
    percentile = float(getattr(embedder, "noise_percentile", PERCENTILE))
    return round(float(cosines[int(percentile * (len(cosines) - 1))]), 4)
