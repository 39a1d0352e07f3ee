"""Start and stop real `halomem serve` processes on 127.0.0.1 (the serve benchmark and the tests)."""
from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx2

from ..ports import free_port


@dataclass
class ServerProcess:
    proc: subprocess.Popen
    port: int
    log_path: Path
    env: dict

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def start_server(env: dict, *args: str, port: int | None = None, timeout: float = 60) -> ServerProcess:
    port = port or free_port()
    return start_process([sys.executable, "-m", "halomem.cli.main", "serve", "--port", str(port), *args], port, env,
                         timeout, "halomem serve")


def start_process(argv: list[str], port: int, env: dict, timeout: float = 60, name: str = "server") -> ServerProcess:
    """Run ``argv`` (a server listening on ``port``) until its /healthz answers 200."""
    log_path = Path(tempfile.mkstemp(prefix="halomem-serve-", suffix=".log")[1])
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
    server = ServerProcess(proc, port, log_path, env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited {proc.returncode}:\n{server.log()[-2000:]}")
        try:
            if httpx2.get(server.url + "/healthz", timeout=2).status_code == 200:
                return server
        except httpx2.HTTPError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"{name} did not come up in {timeout}s:\n{server.log()[-2000:]}")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}

