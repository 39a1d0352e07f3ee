"""The `halomem` command tree (typer): one module per command group."""
