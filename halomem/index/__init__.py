"""Every read query of the kernel. The ACL + validity predicate is built in acl.visible() only."""
from .acl import Scope, visible
from .reader import IndexReader, MemoryIndex, MemoryRow

__all__ = ["Scope", "visible", "IndexReader", "MemoryIndex", "MemoryRow"]
