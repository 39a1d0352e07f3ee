"""The OpenAI-compatible embedding provider: the service a team already runs (OpenAI, Azure OpenAI,
Ollama, vLLM, TEI, Infinity, LM Studio all answer POST {base}/embeddings).

The maintained `openai` client does the transport: timeouts, retries with exponential backoff on
connection errors, 408/409/429/5xx, honouring Retry-After. Here: batching, bounded concurrency, the
dimension check, and turning what is left into one clear error. The API key is read from the env var
the settings NAME (never stored in settings, logs or the store).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from ..errors import ConfigError, EmbedderUnavailableError
from .registry import EmbedderOptions

PROBE_TEXT = "dimension probe"


class OpenAICompatibleEmbedder:
    kind = "openai"
    passage_chars = 2000  # services' windows vary (512 to 8k tokens): well inside most

    def __init__(self, model: str | None, options: EmbedderOptions) -> None:
        if not model:
            raise ConfigError("embedder 'openai' needs a model: HALOMEM_EMBEDDER=openai:<model> (or embedder_model)")
        if not options.url:
            raise ConfigError("embedder 'openai' needs the service's base URL: HALOMEM_EMBEDDER_URL "
                              "(e.g. http://127.0.0.1:11434/v1 for Ollama, https://api.openai.com/v1)")
        import openai

        self._openai = openai
        self._options = options
        self.model = model
        self.name = f"openai:{model}"
        self.url = options.url.rstrip("/")
        key = os.environ.get(options.api_key_env) or "none"  # local servers (Ollama, vLLM, TEI) take no key
        self._client = openai.OpenAI(base_url=self.url, api_key=key, timeout=options.timeout_s,
                                     max_retries=options.retries)
        self.dim = options.dim or 0
        if not self.dim:  # unset: ask the service once (set embedder_dim to skip this request)
            [probe] = self._batch([PROBE_TEXT])
            self.dim = len(probe)

    def _batch(self, texts: list[str]) -> list[list[float]]:
        openai = self._openai
        try:
            answer = self._client.embeddings.create(model=self.model, input=texts, encoding_format="float")
        except openai.APIConnectionError as exc:  # refused, reset, timed out: after the retries
            raise EmbedderUnavailableError(f"embedding service {self.url} unreachable: {_reason(exc)}") from None
        except openai.APIStatusError as exc:
            if exc.status_code in (400, 401, 403, 404, 422):
                raise ConfigError(f"embedding service {self.url} refused model {self.model!r}: HTTP "
                                  f"{exc.status_code} {_reason(exc)}") from None
            raise EmbedderUnavailableError(f"embedding service {self.url} answered HTTP {exc.status_code} "
                                           f"after {self._options.retries} retries") from None
        except openai.OpenAIError as exc:  # a body that is not an embeddings answer
            raise EmbedderUnavailableError(f"embedding service {self.url}: {_reason(exc)}") from None
        vectors = [item.embedding for item in sorted(answer.data, key=lambda d: d.index)]
        if len(vectors) != len(texts):
            raise EmbedderUnavailableError(f"embedding service {self.url} answered {len(vectors)} vectors for "
                                           f"{len(texts)} texts")
        expected = getattr(self, "dim", 0)
        wrong = next((len(v) for v in vectors if expected and len(v) != expected), None)
        if wrong is not None:
            raise ConfigError(f"embedding service {self.url} answered {wrong}-d vectors for model {self.model!r}; "
                              f"expected {expected}-d (embedder_dim, or the store's dimension)")
        return [_normalized(v) for v in vectors]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        size = self._options.batch
        batches = [[t if t.strip() else " " for t in texts[i:i + size]] for i in range(0, len(texts), size)]
        if len(batches) <= 1 or self._options.concurrency == 1:
            return [v for batch in batches for v in self._batch(batch)]
        with ThreadPoolExecutor(max_workers=self._options.concurrency) as pool:
            return [v for vectors in pool.map(self._batch, batches) for v in vectors]


def _normalized(vector: list[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector] if norm else [float(x) for x in vector]


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__
