"""Real `halomem serve` processes for tests (the same helper the serve benchmark uses)."""
from halomem.bench.serving import ServerProcess, bearer, free_port, start_server

__all__ = ["ServerProcess", "bearer", "free_port", "start_server"]
