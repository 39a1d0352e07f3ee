"""The default semantic embedder: a static (model2vec) distillation of all-MiniLM-L6-v2.

A vector is the normalized mean of per-token vectors looked up in one table, so a query embeds in
microseconds and a long document costs a tokenization. The table was distilled from the packaged
MiniLM weights with model2vec (tools/build_embedders.py); it is read here with `tokenizers` and
`safetensors` directly: the same arithmetic as model2vec's StaticModel.encode (tests compare them)
without its import cost (huggingface-hub, 0.25 s) on every CLI call.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ..errors import ConfigError
from .embedders import HashEmbedder

DEFAULT_MODEL = "minilm-l6-v2-static"
MODELS_DIR = Path(__file__).parent / "models"


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
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = model_dir(model)
        try:
            config = json.loads((path / "config.json").read_text(encoding="utf-8"))
            tensors = load_file(str(path / "model.safetensors"))
            self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        except (OSError, ValueError, Exception) as exc:  # a damaged model file is a configuration problem
            raise ConfigError(f"cannot load static embedder model {path}: {exc}") from None
        self._np = np
        self._table = tensors["embeddings"].astype(np.float32)
        if "weights" in tensors:  # model2vec's per-token SIF weights, when stored apart from the table
            self._table *= tensors["weights"].astype(np.float32)[:, None]
        self._mapping = tensors.get("mapping")
        self._max_tokens = int(config.get("max_length") or 512)
        self._normalize = bool(config.get("normalize", True))
        self._unk = self._tokenizer.token_to_id("[UNK]")
        self._fallback = HashEmbedder(int(self._table.shape[1]))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self.model = model if "/" not in model else path.name
        self.dim = int(self._table.shape[1])
        self.name = f"static:{self.model}"

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        encoded = self._tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        return [[i for i in e.ids if i != self._unk][: self._max_tokens] for e in encoded]

    def token_count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        np = self._np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, (text, ids) in enumerate(zip(texts, self._ids(texts))):
            if ids:
                out[row] = self._table[self._mapping[ids] if self._mapping is not None else ids].mean(axis=0)
            elif text.strip():  # only unknown pieces ("a" * 5000): a text-specific vector near nothing,
                out[row] = self._fallback.embed_one(text)  # never a zero vector (its cosine is NaN)
        if self._normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        return out.tolist()
