"""An embedder's knobs from settings (flag > HALOMEM_* env > config.toml): the OpenAI-compatible
provider's, and a model for static/onnx. Its own module: the registry and the providers both read it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any



@dataclass(frozen=True)
class EmbedderOptions:
    """The OpenAI-compatible provider's knobs (and a model for static/onnx); ignored by the others."""

    model: str | None = None
    url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    dim: int | None = None
    batch: int = 64
    concurrency: int = 2
    timeout_s: float = 30.0
    retries: int = 4

    @classmethod
    def from_settings(cls, settings: Any) -> "EmbedderOptions":
        from functools import partial

        from ..config import number_setting

        number = partial(number_setting, settings)  # (key, kind, default, lowest)

        return cls(model=getattr(settings, "embedder_model", None) or None,
                   url=getattr(settings, "embedder_url", None) or None,
                   api_key_env=getattr(settings, "embedder_api_key_env", None) or cls.api_key_env,
                   dim=number("embedder_dim", int, cls.dim, 1), batch=number("embedder_batch", int, cls.batch, 1),
                   concurrency=number("embedder_concurrency", int, cls.concurrency, 1),
                   timeout_s=number("embedder_timeout_s", float, cls.timeout_s, 0.1),
                   retries=number("embedder_retries", int, cls.retries, 0))
