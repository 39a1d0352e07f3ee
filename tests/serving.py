"""Real `halomem serve` processes for tests (the same helper the serve benchmark uses).

Test servers record no periodic audit heads: tests truncate the chain between cases."""
from halomem.bench.serving import ServerProcess, bearer, free_port
from halomem.bench.serving import start_server as _start_server

__all__ = ["ServerProcess", "bearer", "free_port", "start_server"]


def start_server(env: dict, *args: str, **kwargs) -> ServerProcess:  # noqa: ANN003
    return _start_server(env, "--audit-heads-every", "0", *args, **kwargs)
