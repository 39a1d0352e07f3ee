"""The OpenAI-compatible embedding provider: the service a team already runs (OpenAI, Azure OpenAI,
Ollama, vLLM, TEI, Infinity, LM Studio all answer POST {base}/embeddings).

The maintained `openai` client does the transport: timeouts, retries with exponential backoff on
connection errors, 408/409/429/5xx, honouring Retry-After. Here: batching, bounded concurrency, the
dimension check, and turning what is left into one clear error. The API key is read from the env var
the settings NAME (never stored in settings, logs or the store).

The service is untrusted input: its answer is checked before any vector reaches SQL (a list per
text, of real numbers, finite, of the expected dimension and at most pgvector's, with a norm), and
nothing it sends is copied into an error: an error body may echo the request, key included, so an
error names the status, never the body, and any text that still holds the key loses it.
"""
from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from ..errors import ConfigError, EmbedderUnavailableError
from .options import EmbedderOptions

PROBE_TEXT = "dimension probe"
MAX_DIM = 16000  # pgvector's vector type holds at most 16,000 dimensions
MAX_VALUE = 1e6  # embedding components are a few units at most; 1e308 is an overflowed or hostile answer


class OpenAICompatibleEmbedder:
    kind = "openai"
    remote = True  # its work is another machine's: bulk embedding here neither lowers priority nor pauses
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
        self._key = key if key != "none" else None
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
            items = sorted(answer.data, key=lambda d: d.index)
            raw = [item.embedding for item in items]
        except openai.APIConnectionError as exc:  # refused, reset, timed out: after the retries
            raise EmbedderUnavailableError(self._clean(f"embedding service {self.url} unreachable: "
                                                       f"{_reason(exc)}")) from None
        except openai.APIStatusError as exc:  # the body is the service's words (it may echo the key): not copied
            if exc.status_code in (400, 401, 403, 404, 422):
                raise ConfigError(f"embedding service {self.url} refused model {self.model!r}: HTTP "
                                  f"{exc.status_code}") from None
            raise EmbedderUnavailableError(f"embedding service {self.url} answered HTTP {exc.status_code} "
                                           f"after {self._options.retries} retries") from None
        except Exception:  # noqa: BLE001 - a body that is not an embeddings answer (not JSON, no data, ...)
            raise EmbedderUnavailableError(f"embedding service {self.url} sent an answer that is not a list "
                                           "of embeddings") from None
        if len(raw) != len(texts):
            raise EmbedderUnavailableError(f"embedding service {self.url} answered {len(raw)} vectors for "
                                           f"{len(texts)} texts")
        vectors = [self._checked(v) for v in raw]
        expected = getattr(self, "dim", 0)
        wrong = next((len(v) for v in vectors if expected and len(v) != expected), None)
        if wrong is not None:
            raise ConfigError(f"embedding service {self.url} answered {wrong}-d vectors for model {self.model!r}; "
                              f"expected {expected}-d (embedder_dim, or the store's dimension)")
        return vectors

    def _checked(self, vector: object) -> list[float]:
        """A unit vector of finite floats, or EmbedderUnavailableError naming what was wrong (never the values)."""
        def bad(what: str) -> EmbedderUnavailableError:
            return EmbedderUnavailableError(f"embedding service {self.url} sent {what}; nothing was stored")

        if not isinstance(vector, (list, tuple)) or not vector:
            raise bad("an embedding that is not a list of numbers")
        if len(vector) > MAX_DIM:
            raise bad(f"a {len(vector)}-d embedding (pgvector holds at most {MAX_DIM})")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
            raise bad("an embedding with values that are not numbers")
        values = [float(x) for x in vector]
        if not all(math.isfinite(x) for x in values):
            raise bad("an embedding with NaN or infinite values")
        peak = max(abs(x) for x in values)
        if not peak:
            raise bad("an all-zero embedding")
        if peak > MAX_VALUE:
            raise bad(f"an embedding with values beyond {MAX_VALUE:g}")
        scaled = [x / peak for x in values]  # scaled first: the norm cannot overflow
        norm = math.hypot(*scaled)
        return [x / norm for x in scaled]

    def _clean(self, text: str) -> str:
        """Text that may hold what the service sent, without the key."""
        return text.replace(self._key, "[key]") if self._key else text

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        size = self._options.batch
        batches = [[t if t.strip() else " " for t in texts[i:i + size]] for i in range(0, len(texts), size)]
        if len(batches) <= 1 or self._options.concurrency == 1:
            return [v for batch in batches for v in self._batch(batch)]
        with ThreadPoolExecutor(max_workers=self._options.concurrency) as pool:
            return [v for vectors in pool.map(self._batch, batches) for v in vectors]


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__
