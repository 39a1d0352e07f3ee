"""The agent service: `halomem serve` (HTTP JSON API + MCP over streamable HTTP) and `halomem mcp`
(stdio). Thin adapters over halomem.ops: no route decides who may do what."""
