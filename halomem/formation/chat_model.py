"""The team's chat model through the OpenAI-compatible chat-completions API (OpenAI, Azure OpenAI,
Ollama, vLLM, llama.cpp's server, LM Studio all answer POST {base}/chat/completions).

The maintained `openai` client does the transport, as it does for the embedding provider: timeouts,
bounded retries with exponential backoff on connection errors, 408/409/429/5xx, honouring
Retry-After. Here: the answer read as a stream and cut at MAX_ANSWER_BYTES (a huge body is refused,
never held), an overall deadline, and every failure turned into one ModelCallFailed naming a kind
and the status, never the body (an error body may echo the request, key included). The key,
HALOMEM_LLM_API_KEY, is read from the environment and sent only as the bearer token.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, HalomemError, InvalidInputError

KEY_ENV = "HALOMEM_LLM_API_KEY"
MAX_ANSWER_BYTES = 1 << 20  # a completion of a few thousand tokens is tens of KB; past a MiB it is not one


class ModelCallFailed(HalomemError):
    """A call that did not give an answer: ``reason`` is a kind (timeout, unreachable, http-429,
    oversized, not-a-completion, declined); the message says it in words."""

    kind = "model call failed"
    slug = "model-call-failed"

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class ChatOptions:
    url: str
    model: str
    timeout_s: float = 60.0
    retries: int = 3
    tokens_per_day: int = 200_000  # a namespace's default budget (policy facet llm_tokens_per_day overrides)

    @classmethod
    def from_settings(cls, settings: Any) -> "ChatOptions | None":
        """The settings' chat model, or None when none is configured (HALOMEM_LLM_URL, HALOMEM_LLM_MODEL)."""
        url, model = getattr(settings, "llm_url", None), getattr(settings, "llm_model", None)
        if not url and not model:
            return None
        if not url or not model:
            raise ConfigError("a chat model needs both HALOMEM_LLM_URL (the base URL, ending in /v1) and "
                              "HALOMEM_LLM_MODEL")
        if not str(url).startswith(("http://", "https://")):
            raise ConfigError("HALOMEM_LLM_URL must be an http(s) base URL ending in /v1")

        from functools import partial

        from ..config import number_setting

        number = partial(number_setting, settings)  # (key, kind, default, lowest)

        return cls(str(url).rstrip("/"), str(model), number("llm_timeout_s", float, cls.timeout_s, 0.1),
                   number("llm_retries", int, cls.retries, 0),
                   number("llm_tokens_per_day", int, cls.tokens_per_day, 0))


@dataclass(frozen=True)
class Completion:
    text: str
    tokens_in: int
    tokens_out: int
    ms: float


class ChatModel:
    """One configured chat model; ``complete`` is safe to call from several threads."""

    def __init__(self, options: ChatOptions) -> None:
        import openai

        self._openai = openai
        self.options = options
        self.model = options.model
        self._key = os.environ.get(KEY_ENV) or None
        self._client = openai.OpenAI(base_url=options.url, api_key=self._key or "none",
                                     timeout=options.timeout_s, max_retries=options.retries)

    def complete(self, messages: list[dict[str, str]], schema_name: str, schema: dict[str, Any],
                 max_tokens: int) -> Completion:
        """The model's answer to ``messages`` under the named JSON schema, or ModelCallFailed."""
        openai = self._openai
        started = time.monotonic()
        deadline = started + self.options.timeout_s * (self.options.retries + 1)
        try:
            with self._client.chat.completions.with_streaming_response.create(
                    model=self.model, messages=messages, temperature=0, max_tokens=max_tokens,
                    response_format={"type": "json_schema",
                                     "json_schema": {"name": schema_name, "schema": schema, "strict": True}}) as answer:
                body = bytearray()
                for chunk in answer.iter_bytes():
                    body += chunk
                    if len(body) > MAX_ANSWER_BYTES:
                        raise ModelCallFailed("oversized", f"the chat model's answer passed {MAX_ANSWER_BYTES} bytes;"
                                                           " it was not read further")
                    if time.monotonic() > deadline:
                        raise ModelCallFailed("timeout", "the chat model's answer did not finish in time")
        except openai.APITimeoutError:
            raise ModelCallFailed("timeout", f"the chat model did not answer within {self.options.timeout_s:g} s "
                                             f"({self.options.retries} retries)") from None
        except openai.APIConnectionError:
            raise ModelCallFailed("unreachable", f"chat model service {self.options.url} unreachable after "
                                                 f"{self.options.retries} retries") from None
        except openai.APIStatusError as exc:  # the body is the service's words (it may echo the key): not copied
            raise ModelCallFailed(f"http-{exc.status_code}", f"the chat model service answered HTTP "
                                                             f"{exc.status_code}") from None
        except ModelCallFailed:
            raise
        except Exception:  # noqa: BLE001 - a transport failure mid-body
            raise ModelCallFailed("unreachable", "the chat model's answer broke off") from None
        return self._completion(bytes(body), (time.monotonic() - started) * 1000.0, messages)

    def _completion(self, body: bytes, ms: float, messages: list[dict[str, str]]) -> Completion:
        try:
            value = json.loads(body)
            message = value["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError, RecursionError):
            raise ModelCallFailed("not-a-completion", "the chat model service sent something that is not a chat "
                                                      "completion") from None
        text = message.get("content") if isinstance(message, dict) else None
        if not isinstance(text, str):
            if isinstance(message, dict) and message.get("refusal"):
                raise ModelCallFailed("declined", "the chat model declined to answer")
            raise ModelCallFailed("not-a-completion", "the chat model's answer has no text")
        usage = value.get("usage") if isinstance(value.get("usage"), dict) else {}
        sent = sum(len(m["content"]) for m in messages)
        return Completion(text, _count(usage.get("prompt_tokens"), sent), _count(usage.get("completion_tokens"),
                                                                                 len(text)), ms)

    def close(self) -> None:
        self._client.close()


def _count(value: Any, chars: int) -> int:
    """A usage count as the service reported it, or an estimate (4 characters a token) when it did not."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 31:
        return value
    return max(1, chars // 4)


def chat_model(settings: Any) -> ChatModel:
    """The configured chat model, or InvalidInputError saying how to configure one."""
    options = ChatOptions.from_settings(settings)
    if options is None:
        raise InvalidInputError("extraction needs a chat model: set HALOMEM_LLM_URL (an OpenAI-compatible base "
                                "URL ending in /v1) and HALOMEM_LLM_MODEL")
    return ChatModel(options)
