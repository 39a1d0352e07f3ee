"""Reference sidecar server for out-of-process cartridges."""
