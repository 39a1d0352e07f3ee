"""The default semantic embedder: a static (model2vec) distillation of all-MiniLM-L6-v2.

A vector is the normalized mean of per-token vectors looked up in one table, so a query embeds in
microseconds and a long document costs a tokenization. The table was distilled from the packaged
MiniLM weights with model2vec (tools/build_embedders.py) and is stored as model2vec stores it
(safetensors + tokenizer.json); the arithmetic is model2vec's StaticModel.encode (tests compare the
vectors). It is done here rather than through model2vec because a CLI call pays every import:
model2vec brings huggingface-hub (0.25 s), and even numpy costs 45 ms, so a few texts (a query) are
averaged in plain Python straight from the table's bytes and numpy is used for batches.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Sequence

from ..errors import ConfigError
from .embedders import HashEmbedder
from .safetensors import read_safetensors

DEFAULT_MODEL = "minilm-l6-v2-static"
MODELS_DIR = Path(__file__).parent / "models"
PLAIN_PYTHON_TOKENS = 2_000  # up to this many tokens in one call, no numpy (a query, a short memory)


def model_dir(model: str) -> Path:
    """A shipped model's name, or a directory holding model.safetensors + tokenizer.json + config.json."""
    path = MODELS_DIR / model if "/" not in model else Path(model).expanduser()
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        shipped = ", ".join(sorted(p.name for p in MODELS_DIR.iterdir() if p.is_dir())) or "none"
        raise ConfigError(f"static embedder model {model!r} not found (shipped: {shipped}; or a directory "
                          f"with model.safetensors and tokenizer.json)")
    return path


class StaticEmbedder:
    """Token-table embeddings: mean of the text's token vectors (special and unknown tokens dropped)."""

    kind = "static"
    passage_chars = 800  # ~190 word pieces: a mean over more drowns a fact

    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        from tokenizers import Tokenizer

        path = model_dir(model)
        try:
            config = json.loads((path / "config.json").read_text(encoding="utf-8"))
            tensors = read_safetensors(path / "model.safetensors")
            self._table = tensors["embeddings"]
            self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        except Exception as exc:  # a damaged or foreign model file is a configuration problem
            raise ConfigError(f"cannot load static embedder model {path}: {exc}") from None
        self._weights = tensors.get("weights")  # model2vec's per-token SIF weights, when stored apart
        self._mapping = tensors.get("mapping")  # token id -> table row, for a quantized vocabulary
        self._numpy_table: Any = None
        self._max_tokens = int(config.get("max_length") or 512)
        self._normalize = bool(config.get("normalize", True))
        self._unk = self._tokenizer.token_to_id("[UNK]")
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self.dim = int(self._table.shape[1])
        self._fallback = HashEmbedder(self.dim)
        self.model = model if "/" not in model else path.name
        self.name = f"static:{self.model}"

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        encoded = self._tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        return [[i for i in e.ids if i != self._unk][: self._max_tokens] for e in encoded]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        ids = self._ids(texts)
        if "numpy" in sys.modules or sum(map(len, ids)) > PLAIN_PYTHON_TOKENS:
            means = self._means_numpy(ids)
        else:
            means = [self._mean(row) for row in ids]
        out = []
        for text, mean in zip(texts, means):
            if mean is None:  # only unknown pieces ("a" * 5000): a text-specific vector near nothing,
                out.append(self._fallback.embed_one(text) if text.strip() else [0.0] * self.dim)  # not zero
                continue
            norm = math.sqrt(math.fsum(x * x for x in mean)) if self._normalize else 0.0
            out.append([x / norm for x in mean] if norm else list(mean))
        return out

    def _row(self, token: int) -> Sequence[float]:
        index = int(self._mapping.row(token)[0]) if self._mapping is not None else token
        values = self._table.row(index)
        if self._weights is None:
            return values
        weight = self._weights.row(token)[0]
        return [v * weight for v in values]

    def _mean(self, ids: list[int]) -> list[float] | None:
        if not ids:
            return None
        total = [0.0] * self.dim
        for token in ids:
            total = [a + b for a, b in zip(total, self._row(token))]
        return [x / len(ids) for x in total]

    def _means_numpy(self, ids: list[list[int]]) -> list[list[float] | None]:
        import numpy as np

        if self._numpy_table is None:
            self._numpy_table = self._table.numpy(np).astype(np.float32)
        mapping = self._mapping.numpy(np).reshape(-1) if self._mapping is not None else None
        weights = self._weights.numpy(np).astype(np.float32).reshape(-1) if self._weights is not None else None
        means: list[list[float] | None] = []
        for row in ids:
            if not row:
                means.append(None)
                continue
            vectors = self._numpy_table[mapping[row] if mapping is not None else row]
            if weights is not None:  # weights are per token, rows may be shared (a quantized vocabulary)
                vectors = vectors * weights[row][:, None]
            means.append(vectors.mean(axis=0).tolist())
        return means
