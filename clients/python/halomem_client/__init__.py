"""halomem-client: halomem's operations over HTTP, sync (``Client``) and async (``AsyncClient``),
with the kernel's result types (halomem_client.results) and error classes (halomem_client.errors).
Framework adapters import their framework only when imported themselves:
halomem_client.langgraph (a LangGraph BaseStore), halomem_client.langchain and
halomem_client.llamaindex (retrievers)."""
from __future__ import annotations

from .aio import AsyncClient
from .client import Client
from .errors import (AuthenticationError, ConflictError, HalomemError, InvalidInputError, NotFoundError,
                     PermissionDeniedError, RateLimitedError, ServiceUnreachableError)

__all__ = ["AsyncClient", "Client", "HalomemError", "AuthenticationError", "ConflictError", "InvalidInputError",
           "NotFoundError", "PermissionDeniedError", "RateLimitedError", "ServiceUnreachableError"]
__version__ = "0.1.0"

