"""Per-namespace retriever policy with a deterministic FNV-1a A/B split.

The policy values (``model``) are importable without the database stack (the remote client uses
them); the store's functions load on first use.
"""
from typing import Any

from .model import ABTest, Policy, choose_driver, fnv1a32, parse_policy

__all__ = ["ABTest", "Policy", "choose_driver", "fnv1a32", "parse_policy", "effective_policy", "list_policies"]


def __getattr__(name: str) -> Any:
    if name in ("effective_policy", "list_policies"):
        from . import store

        return getattr(store, name)
    raise AttributeError(name)
