"""Isolated execution of retriever cartridges halomem did not ship.

The driver boundary is a process boundary: a cartridge's ``plan()`` runs in a worker process that
holds no database connection, no credentials and no kernel objects, confined by the kernel of the
OS (Landlock, seccomp, rlimits). Its view is a proxy whose calls go over a pipe to the kernel,
which answers them from the real ScopedView of that call only.

``wire`` (framing and the contract types as JSON), ``confine`` (what the OS enforces),
``worker`` (the worker's main), ``cartridge`` (what to load, found without importing it),
``isolated`` (the kernel side: ``IsolatedDriver``, a pool of reused workers).
"""
