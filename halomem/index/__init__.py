"""Every read query of the kernel. The ACL + validity predicate is built in acl.visible() only."""
from .acl import Scope, in_subtree, visible
from .reader import IndexReader, MemoryIndex, MemoryRow

__all__ = ["Scope", "in_subtree", "visible", "IndexReader", "MemoryIndex", "MemoryRow"]
