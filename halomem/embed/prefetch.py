"""A local CLI call embeds its text in a forked child while the parent boots the kernel.

`halomem search` and `halomem remember` know their text before they connect to the database, and
on two cores the transformer's cost (ONNX Runtime's import, the model's load, the run) can overlap
the parent's own (SQLAlchemy and psycopg imports, connecting, reading the store's embedder: ~250
ms). The child embeds the text with its passages (and the similarity floor's calibration sentences
when the embedder does not know its floor) with the embedder the settings name, and sends the
vectors back through a pipe. A handful of texts is embedded on one thread by a session that starts
fast (OnnxEmbedder.for_few_texts): a child on both cores slowed the parent by ~40 ms. The parent's
embedder serves a text from the child's vectors only when the child's embedder is the one the
store turned out to use, and embeds anything else itself. A child that fails, or sends something
unreadable, costs nothing but the wait: the parent embeds as it would have.

Only a local transformer is worth it (`onnx`): hash and static embed in microseconds, and a remote
service is asked by the process that owns the call.
"""
from __future__ import annotations

import json
import os
from typing import Any, Sequence

WORTH_IT = ("onnx",)
FEW_TEXTS = 8  # up to this many, a session that starts fast beats one that runs fast (OnnxEmbedder.for_few_texts)


class Prefetch:
    """One forked child embedding ``texts`` with the embedder ``spec`` names."""

    def __init__(self, spec: str, texts: Sequence[str]) -> None:
        self._vectors: dict[str, list[float]] | None = None
        self._name: str | None = None
        self._read, write = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # the child: embed, write, and leave without running the parent's exit hooks
            os.close(self._read)
            code = 1
            try:
                _embed_into(write, spec, list(texts))
                code = 0
            except BaseException:  # noqa: BLE001 - the parent embeds itself when this child fails
                pass
            finally:
                os._exit(code)
        os.close(write)

    def vectors(self, name: str) -> dict[str, list[float]]:
        """The child's vectors by text when it embedded with ``name`` (the store's embedder), else {}."""
        if self._vectors is None:
            chunks = []
            try:
                while chunk := os.read(self._read, 1 << 20):
                    chunks.append(chunk)
            finally:
                os.close(self._read)
                os.waitpid(self._pid, 0)
            try:
                payload = json.loads(b"".join(chunks) or b"{}")
                self._name = str(payload.get("name"))
                self._vectors = {str(t): [float(x) for x in v] for t, v in payload.get("vectors", {}).items()}
            except (ValueError, TypeError, AttributeError):
                self._vectors = {}
        return self._vectors if self._name == name else {}


def _embed_into(fd: int, spec: str, texts: list[str]) -> None:
    from .calibrate import UNRELATED, declared_floor
    from .passages import passage_chars, split
    from .registry import get_embedder

    embedder = get_embedder(spec)
    size = passage_chars(embedder)
    calibration = UNRELATED if declared_floor(embedder) is None else ()
    wanted = list(dict.fromkeys([*texts, *(p for t in texts for p in split(t, size)), *calibration]))
    if len(wanted) <= FEW_TEXTS and callable(getattr(embedder, "for_few_texts", None)):
        embedder.for_few_texts()
    payload = json.dumps({"name": embedder.name, "vectors": dict(zip(wanted, embedder.embed(wanted)))}).encode()
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)


class PrefetchedEmbedder:
    """The kernel's embedder, answering from a Prefetch the texts it holds (same name, dim, window)."""

    def __init__(self, inner: Any, prefetch: Prefetch) -> None:
        self._inner = inner
        self._prefetch = prefetch

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._inner, attribute)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        held = self._prefetch.vectors(self._inner.name)
        if texts and all(t in held for t in texts):
            return [held[t] for t in texts]
        return self._inner.embed(texts)


def start(spec: str | None, texts: Sequence[str]) -> Prefetch | None:
    """A Prefetch when it pays (a local transformer, fork available), else None."""
    from .registry import DEFAULT_SPEC, split_spec

    spec = spec or DEFAULT_SPEC
    try:
        kind, _ = split_spec(spec)
    except Exception:  # noqa: BLE001 - a bad spec is reported by the kernel's own boot
        return None
    if kind not in WORTH_IT or not hasattr(os, "fork") or not texts:
        return None
    try:
        return Prefetch(spec, texts)
    except OSError:
        return None
