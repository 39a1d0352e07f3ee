"""The default embedder: all-MiniLM-L6-v2 on ONNX Runtime, its graph built from the weights package.

Held to torch's MiniLM on 520 varied texts (the reference vectors were made with torch by
tools/build_embedders.py reference; where torch is installed the test also runs it live), the
embedder contract, its graph built into a cache directory, and the CLI's prefetch."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from halomem.embed import DEFAULT_SPEC, get_embedder
from halomem.embed import onnx_graph
from halomem.errors import ConfigError
from tests.parity_texts import digest, parity_texts
from tests.test_embedders import _contract

REFERENCE = Path(__file__).parent / "data" / "minilm-torch-reference.npz"


def test_the_default_is_the_onnx_transformer() -> None:
    embedder = get_embedder()
    assert DEFAULT_SPEC == "onnx"
    assert (embedder.kind, embedder.name, embedder.dim) == ("onnx", "onnx:minilm-l6-v2", 384)
    assert get_embedder(embedder.name).name == embedder.name  # the name a store records opens it again


def test_the_onnx_embedder_keeps_the_contract() -> None:
    _contract(get_embedder("onnx"))


def _mean_cosine(ours: np.ndarray, theirs: np.ndarray) -> tuple[float, float]:
    cos = (ours * theirs).sum(axis=1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1))
    return float(cos.mean()), float(cos.min())


def test_it_equals_torch_minilm_on_varied_texts() -> None:
    texts = parity_texts()
    reference = np.load(REFERENCE)
    assert str(reference["digest"]) == digest(texts), "regenerate: python tools/build_embedders.py reference"
    assert len(texts) >= 500
    ours = np.array(get_embedder("onnx").embed(texts))
    mean, worst = _mean_cosine(ours, reference["vectors"].astype(np.float64))
    # the bar is a mean of 0.99; fp32 weights in a fused graph give torch's vectors (the
    # reference is stored as float16)
    assert mean >= 0.9999 and worst >= 0.999, (mean, worst)


def test_it_equals_torch_minilm_live_where_torch_is_installed() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    texts = parity_texts()
    ours = np.array(get_embedder("onnx").embed(texts))
    theirs = np.array(get_embedder("minilm").embed(texts))
    mean, worst = _mean_cosine(ours, theirs)
    assert mean >= 0.99 and worst >= 0.98, (mean, worst)


def test_batching_and_order_change_nothing() -> None:
    embedder = get_embedder("onnx")
    texts = ["short", "a somewhat longer sentence about the deploy pipeline", "x " * 400, "mid length text here"]
    together = np.array(embedder.embed(texts))
    reversed_ = np.array(embedder.embed(texts[::-1]))[::-1]
    alone = np.array([embedder.embed([t])[0] for t in texts])
    assert np.abs(together - reversed_).max() < 1e-5 and np.abs(together - alone).max() < 1e-5


def test_the_shipped_encoder_declares_the_floor_calibration_measures() -> None:
    """The one-shot CLI skips calibration because the floor is declared: it must be the measured one."""
    from halomem.embed.calibrate import measured_floor, noise_floor

    embedder = get_embedder("onnx")
    assert embedder.calibrated_floor is not None
    assert noise_floor(embedder) == embedder.calibrated_floor == measured_floor(embedder)
    assert get_embedder("static").__dict__.get("calibrated_floor") is None  # the others are measured


def test_a_session_set_up_for_few_texts_gives_the_same_vectors() -> None:
    texts = parity_texts()[:40]
    few = get_embedder("onnx")
    few.for_few_texts()  # one thread, weights not prepacked: what the CLI's prefetch child runs
    mean, worst = _mean_cosine(np.array(few.embed(texts)), np.array(get_embedder("onnx").embed(texts)))
    assert worst >= 0.99999, (mean, worst)


def test_the_graph_is_built_into_the_cache_when_the_package_has_none(tmp_path: Path) -> None:
    """An install without `make install`'s build step: the first load builds into HALOMEM_CACHE_DIR,
    the next one reads it; the vectors are the packaged graph's."""
    code = ("from halomem.embed import onnx_graph as g; dirs = g.cache_dirs; g.cache_dirs = lambda: dirs()[1:];"
            "from halomem.embed.onnx import OnnxEmbedder; e = OnnxEmbedder(); print(__import__('json').dumps("
            "{'where': str(g.built_model()), 'v': e.embed(['the build server runs nightly'])[0][:8]}))")
    env = {"HALOMEM_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    first = json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                      check=True).stdout)
    assert first["where"].startswith(str(tmp_path)) and Path(first["where"]).is_file()
    built = sorted(p.name for p in (tmp_path / "minilm-l6-v2").iterdir())
    assert built == [onnx_graph.GRAPH_NAME, onnx_graph.weights_name()]  # no staging directory left behind
    again = json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                      check=True).stdout)
    packaged = get_embedder("onnx").embed(["the build server runs nightly"])[0][:8]
    assert again == first and np.allclose(first["v"], packaged, atol=1e-6)


def test_a_model_folder_whose_graph_pools_itself_runs_as_onnx_path(tmp_path: Path) -> None:
    """`onnx:DIR` with a graph that ends in the sentence embedding (the shipped graph built from
    other weights: tools/build_embedders.py fused-fp32) is used as it is, not pooled again."""
    import onnx

    onnx.save_model(onnx_graph.build(), str(tmp_path / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.weights", size_threshold=1024)
    (tmp_path / "tokenizer.json").write_bytes((onnx_graph.PACKAGE_DIR / "tokenizer.json").read_bytes())
    texts = ["the build server runs nightly", "invoices are paid within thirty days"]
    assert np.allclose(get_embedder(f"onnx:{tmp_path}").embed(texts), get_embedder("onnx").embed(texts), atol=1e-6)


def test_a_foreign_weights_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(onnx_graph, "source_model", lambda: fake)
    with pytest.raises(ConfigError, match="sha256 differs"):
        onnx_graph.build()


def test_the_floor_keeps_nonsense_out_and_paraphrases_in() -> None:
    from halomem.embed.calibrate import noise_floor

    embedder = get_embedder("onnx")
    floor = noise_floor(embedder)
    facts = [json.loads(line) for line in
             (Path(__file__).parent.parent / "halomem" / "fixtures" / "paraphrase" / "facts.jsonl").read_text().splitlines()]
    memories = np.array(embedder.embed([f["fact"] for f in facts]))
    for nonsense in ("zebra giraffe", "zxqvbnm", "the weather in Paris", "asdf qwerty", "lorem ipsum dolor sit amet"):
        assert (memories @ np.array(embedder.embed([nonsense])[0])).max() < floor, nonsense
    own = [float(memories[i] @ np.array(v)) for i, v in enumerate(embedder.embed([f["question"] for f in facts]))]
    assert sum(c >= floor for c in own) >= len(facts) - 1


def test_a_cli_search_embeds_in_a_prefetch_child_with_the_same_answer(cli_env: dict, tmp_path: Path) -> None:
    """`halomem search` on the default embedder: the parent never loads ONNX Runtime (the forked
    child embedded the query and the floor's sentences), and its hits are an in-process search's."""
    from tests.test_embedders import own_store_cli

    run = own_store_cli(cli_env, tmp_path)
    facts = ["Deploys go through ArgoCD canaries before reaching every cluster.",
             "Invoices are paid within thirty days of receipt.", "Maria leads the payments squad."]
    for fact in facts:
        assert run("remember", "--ns", "acme", fact).returncode == 0
    env = {**cli_env, "HALOMEM_HOME": str(tmp_path)}
    env.pop("HALOMEM_DATABASE_URL", None)
    code = ("import atexit, sys; atexit.register(lambda: print('ORT', 'onnxruntime' in sys.modules, file=sys.stderr));"
            "from halomem.cli.main import run; run(sys.argv[1:])")
    try:
        done = subprocess.run([sys.executable, "-c", code, "search", "--ns", "acme", "when do suppliers get their money",
                               "--json"], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "ORT False" in done.stderr
        hits = json.loads(done.stdout)["hits"]
        assert hits and hits[0]["content"] == facts[1]
        again = run("search", "--ns", "acme", "when do suppliers get their money", "--json", HALOMEM_EMBEDDER="onnx")
        assert [(h["ref"], round(h["score"], 3)) for h in json.loads(again.stdout)["hits"]] == \
            [(h["ref"], round(h["score"], 3)) for h in hits]
    finally:
        run("db", "stop")


def test_a_prefetch_for_another_embedder_than_the_store_s_is_not_used(cli_env: dict, tmp_path: Path) -> None:
    from tests.test_embedders import own_store_cli

    run = own_store_cli(cli_env, tmp_path, HALOMEM_EMBEDDER="hash")
    try:
        assert run("remember", "--ns", "acme", "The build server runs nightly.").returncode == 0
        env = {k: v for k, v in cli_env.items() if k != "HALOMEM_EMBEDDER"}
        plain = own_store_cli(env, tmp_path)  # unset: the store's own (hash); the child guessed onnx
        done = plain("search", "--ns", "acme", "build server", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["hits"][0]["content"] == "The build server runs nightly."
        made = plain("remember", "--ns", "acme", "Another memory.", "--json")
        assert made.returncode == 0, made.stderr
    finally:
        run("db", "stop")
