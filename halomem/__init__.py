"""halomem: a governed organizational memory layer for AI agents.

The kernel owns custody (writes, tiers, supersedence, ACL, provenance, audit); ranking is
delegated to retriever cartridges that only ever see a ScopedView. Import `halomem.kernel.Kernel`
to embed it; the package root stays light so `import halomem.types` is cheap.
"""
__version__ = "0.1.0"
