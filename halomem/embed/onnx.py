"""all-MiniLM-L6-v2 through ONNX Runtime (a benchmark candidate; the onnx extra).

The model is tools/build_embedders.py's output directory (model.onnx, model_int8.onnx preferred when
present, tokenizer.json) or one .onnx file in it. Mean pooling over the attention mask, L2-normalized: MiniLM's own head.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..errors import ConfigError

WINDOW_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length
BATCH = 32


class OnnxEmbedder:
    kind = "onnx"
    passage_chars = 1000  # ~230 word pieces of its 256
    dim = 384

    def __init__(self, model: str) -> None:
        try:
            import numpy as np
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(f"embedder 'onnx' needs onnxruntime (pip install onnxruntime): {exc}") from None
        path = Path(model).expanduser()
        if path.suffix == ".onnx":  # one file of the directory (model.onnx: fp32, model_int8.onnx: int8)
            path, weights = path.parent, path if path.is_file() else None
        else:
            weights = next((p for p in (path / "model_int8.onnx", path / "model.onnx") if p.is_file()), None)
        if weights is None or not (path / "tokenizer.json").is_file():
            raise ConfigError(f"onnx embedder: {path} has no model.onnx / tokenizer.json")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        self.weights = weights
        self._session = ort.InferenceSession(str(weights), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self._tokenizer.enable_truncation(WINDOW_TOKENS)
        self._tokenizer.enable_padding()
        self._np = np
        self.model = f"{path.name}/{weights.stem}"
        self.name = f"onnx:{self.model}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        np = self._np
        out: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            encoded = self._tokenizer.encode_batch(list(texts[start:start + BATCH]))
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                               "token_type_ids": np.zeros_like(ids)})[0]
            pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out += (pooled / np.where(norms > 0, norms, 1)).tolist()
        return out
