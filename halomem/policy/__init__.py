"""Per-namespace retriever policy with a deterministic FNV-1a A/B split."""
from .model import ABTest, Policy, choose_driver, fnv1a32, parse_policy
from .store import effective_policy, list_policies

__all__ = ["ABTest", "Policy", "choose_driver", "fnv1a32", "parse_policy", "effective_policy", "list_policies"]
