"""Which embedder a kernel runs: a spec ("static", "openai:nomic-embed-text", "static:/path") plus
options from settings (flag > HALOMEM_* env > config.toml), built on demand so a CLI call pays only
for the embedder it uses."""
from __future__ import annotations

import threading
from typing import Callable, TypeVar

from ..errors import ConfigError
from .embedders import Embedder, HashEmbedder
from .options import EmbedderOptions

T = TypeVar("T")

KINDS = ("static", "openai", "hash", "onnx", "minilm")
ALIASES = {"bge": "onnx:bge-small-en-v1.5"}  # the packaged encoders' short names (embed/packaged.py)
DEFAULT_SPEC = "onnx"  # all-MiniLM-L6-v2 on ONNX Runtime: the local semantic default (docs/bench/embed.md)


def split_spec(spec: str) -> tuple[str, str | None]:
    """"kind" or "kind:model" (a model name, or a path for static/onnx)."""
    spec = ALIASES.get(spec.strip(), spec)
    kind, _, model = spec.strip().partition(":")
    if kind not in KINDS:
        raise ConfigError(f"unknown embedder {kind!r} (known: {', '.join((*KINDS, *ALIASES))})")
    return kind, (model or None)


def get_embedder(spec: str | None = None, options: EmbedderOptions | None = None) -> Embedder:
    options = options or EmbedderOptions()
    kind, model = split_spec(spec or DEFAULT_SPEC)
    model = model or options.model
    if kind == "hash":
        return HashEmbedder()
    if kind == "static":
        from .static import DEFAULT_MODEL, StaticEmbedder

        return StaticEmbedder(model or DEFAULT_MODEL)
    if kind == "onnx":
        from .onnx import OnnxEmbedder

        return OnnxEmbedder(model)  # no model: the shipped all-MiniLM-L6-v2
    if kind == "minilm":
        from .embedders import MiniLMEmbedder

        return MiniLMEmbedder()
    from .remote import OpenAICompatibleEmbedder

    return OpenAICompatibleEmbedder(model, options)


class EmbedderChanged(Exception):
    """The store's embedder is no longer the one a write embedded with (a reembed swapped it)."""

    def __init__(self, stored: str) -> None:
        super().__init__(stored)
        self.stored = stored


class ActiveEmbedder:
    """A kernel's embedder, which follows the store's: `halomem reembed` may change a live store's
    embedder, and every search (in its snapshot) and every write (under the swap lock) checks the
    store's before using this one (write.vector_swap)."""

    def __init__(self, embedder: Embedder, options: EmbedderOptions) -> None:
        self.current = embedder
        self._options = options
        self._lock = threading.Lock()

    def follow(self, stored: str | None) -> Embedder:
        """The embedder named ``stored`` (the store's), loaded once when it changed."""
        if stored is None or stored == self.current.name:
            return self.current
        with self._lock:
            if stored != self.current.name:
                self.current = get_embedder(stored, self._options)
        return self.current

    def redo_on_swap(self, write: Callable[[], T]) -> T:
        """Run a write that embeds; when the store's embedder changed under it, follow and redo it once."""
        try:
            return write()
        except EmbedderChanged as exc:
            self.follow(exc.stored)
            return write()
