"""The default embedder: all-MiniLM-L6-v2, a transformer sentence encoder, run by ONNX Runtime.

``onnx`` (or ``onnx:minilm-l6-v2``) is the shipped encoder, its graph built from a pinned registry
package's weights by embed/onnx_graph.py: no torch, nothing downloaded. ``onnx:/path`` runs another
export of the same architecture: a directory with model.onnx (or model_int8.onnx) and
tokenizer.json, or one .onnx file in such a directory, whose output is the last hidden state (pooled
here) or the sentence embedding (tools/build_embedders.py makes these for `halomem bench embed`).
``onnx:bge-small-en-v1.5`` (``--embedder bge``) runs an export a registry package ships, with its own
pooling and window, one text per call (embed/packaged.py).

Texts are tokenized by MiniLM's own WordPiece (tokenizers, in Rust), cut to its 256-token window,
sorted by length and run in batches of similar length under a token budget: padding is the cost a
batch of mixed lengths pays for nothing.
"""
from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Any, Sequence

from ..errors import ConfigError
from .calibrate import TRANSFORMER_PERCENTILE
from .packaged import ENCODERS

SHIPPED = "minilm-l6-v2"
WINDOW_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length
BATCH_TOKENS = 4096  # rows x padded length per run: large enough to keep both cores busy, small enough for cache
MAX_BATCH = 64
THREADS_VARIABLE = "HALOMEM_EMBED_THREADS"
SHIPPED_NOISE_FLOOR = 0.1669  # embed.calibrate's measure for the shipped build (a test holds it to that)


def intra_op_threads(threads: int | None) -> int:
    """The threads a session runs on: ``threads``, else HALOMEM_EMBED_THREADS (`halomem serve` leaves a
    core to other callers while one embeds a batch), else up to 4 cores."""
    return threads or int(os.environ.get(THREADS_VARIABLE) or 0) or min(4, os.cpu_count() or 1)


def serving_threads() -> int:
    """`halomem serve`'s HALOMEM_EMBED_THREADS: all cores but one, so a search beside a batch's
    embedding still has a core (fair sharing), and a query's embedding runs beside the search's
    reads (embed.early)."""
    return max(1, (os.cpu_count() or 1) - 1)


def _session(model: Path | bytes, threads: int | None, prepack: bool = True):  # noqa: ANN202
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = intra_op_threads(threads)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # warnings about unused initializers are not the operator's business
    if not prepack:
        options.add_session_config_entry("session.disable_prepacking", "1")
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


class OnnxEmbedder:
    kind = "onnx"
    passage_chars = 1000  # ~230 word pieces of its 256
    dim = 384
    noise_percentile = TRANSFORMER_PERCENTILE  # its similarity floor: a transformer's unrelated pairs spread wide

    def __init__(self, model: str | None = None, threads: int | None = None) -> None:
        """Names the model; the runtime loads on the first embed(), so a command that never embeds
        (an audit tail, a policy change) does not pay ONNX Runtime's import and the model's load."""
        if importlib.util.find_spec("onnxruntime") is None:  # found, not imported: that costs 80 ms
            raise ConfigError("embedder 'onnx' needs onnxruntime (pip install onnxruntime)")
        self._threads = threads
        self._prepack = True
        self._session: Any = None
        self.calibrated_floor: float | None = None
        self._lock = threading.Lock()
        self._pooling, self._window, self._max_batch = "mean", WINDOW_TOKENS, MAX_BATCH
        if model in (None, "", SHIPPED):
            from .onnx_graph import PACKAGE_DIR, source_model

            source_model()  # a missing weights package is a configuration error now, not at the first search
            self._weights: Path | None = None
            self._tokenizer_file = PACKAGE_DIR / "tokenizer.json"
            self.model = SHIPPED
            self.name = f"onnx:{SHIPPED}"
            self.calibrated_floor = SHIPPED_NOISE_FLOOR
        elif model in ENCODERS:  # a ready-made export a registry package ships (embed/packaged.py)
            packaged = ENCODERS[model]
            self._weights, self._tokenizer_file = packaged.files()
            self._pooling, self._window = packaged.pooling, packaged.window
            self._max_batch = 1  # dynamic int8: a batch-mate would change the vector (embed/packaged.py)
            self.model = model
            self.name = f"onnx:{model}"
            self.calibrated_floor = packaged.noise_floor
        else:
            self._weights, self._tokenizer_file = self._export(Path(model).expanduser())
            self.model = f"{self._tokenizer_file.parent.name}/{self._weights.stem}"
            self.name = f"onnx:{model}"

    @property
    def threads(self) -> int:
        """The cores its runs take (embed.early starts a query's embedding beside the search's
        reads only when a core is left for them)."""
        return intra_op_threads(self._threads)

    def for_few_texts(self) -> None:
        """Set up for a process that embeds a handful of texts and exits (the CLI's prefetch child):
        one thread, beside the parent's start-up on the other core, and no prepacking of the
        weights: a session ready in ~5 ms instead of ~45 ms, whose runs take twice as long."""
        if self._session is None:
            self._threads, self._prepack = 1, False

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            import numpy as np
            from tokenizers import Tokenizer

            try:
                if self._weights is None:
                    from .onnx_graph import built_model

                    weights: Path | bytes = built_model()
                else:
                    weights = self._weights
                tokenizer = Tokenizer.from_file(str(self._tokenizer_file))
                session = _session(weights, self._threads, self._prepack)
            except ConfigError:
                raise
            except Exception as exc:  # a damaged or foreign model file is a configuration problem
                raise ConfigError(f"cannot load onnx embedder {self.name}: {exc}") from None
            tokenizer.enable_truncation(self._window)
            tokenizer.no_padding()
            self._np, self._tokenizer = np, tokenizer
            self._inputs = {i.name for i in session.get_inputs()}
            self._session = session

    @property
    def weights(self) -> Path:
        """The model file in use (benchmarks count its size)."""
        if self._weights is not None:
            return self._weights
        from .onnx_graph import built_model

        built = built_model()
        return built if isinstance(built, Path) else Path("<memory>")

    @staticmethod
    def _export(path: Path) -> tuple[Path, Path]:
        if path.suffix == ".onnx":  # one file of the directory (model.onnx: fp32, model_int8.onnx: int8)
            folder, weights = path.parent, path if path.is_file() else None
        else:
            folder = path
            weights = next((p for p in (path / "model_int8.onnx", path / "model.onnx") if p.is_file()), None)
        if weights is None or not (folder / "tokenizer.json").is_file():
            raise ConfigError(f"onnx embedder: {path} has no model.onnx / tokenizer.json")
        return weights, folder / "tokenizer.json"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        if self._session is None:
            self._load()
        encoded = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
        out: list[Any] = [None] * len(texts)
        start = 0
        while start < len(order):
            longest = len(encoded[order[start]].ids)
            end = start + 1  # grow the batch while rows x (its longest row) fits the budget
            while end < len(order) and end - start < self._max_batch and \
                    (end - start + 1) * len(encoded[order[end]].ids) <= max(BATCH_TOKENS, longest):
                end += 1
            rows = order[start:end]
            for i, vector in zip(rows, self._run([encoded[i].ids for i in rows])):
                out[i] = vector
            start = end
        return out

    def _run(self, ids: list[list[int]]) -> list[list[float]]:
        np = self._np
        width = max(len(row) for row in ids)
        batch = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for r, row in enumerate(ids):
            batch[r, :len(row)] = row
            mask[r, :len(row)] = 1
        feed = {"input_ids": batch, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(batch)
        result = self._session.run(None, feed)[0]
        if result.ndim == 3:  # a last hidden state: [CLS] (as bge was trained) or the mean over the mask, then L2
            result = result[:, 0, :] if self._pooling == "cls" else (result * mask[..., None]).sum(axis=1)
            norms = np.linalg.norm(result, axis=1, keepdims=True)
            result = result / np.where(norms > 0, norms, 1)
        return result.astype(np.float64).tolist()
