"""Settings, resolved as: explicit flags > HALOMEM_* environment > config file > defaults."""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError

ENV_PREFIX = "HALOMEM_"
DEFAULT_RETENTION_DAYS = 30.0  # how long a search's query text is kept for replay (audit.seen)
KEYS = ("home", "database_url", "read_database_url", "embedder", "ns", "sidecar_url", "isolate", "driver_deadline_ms",
        "driver_memory_mb", "embedder_model", "embedder_url", "embedder_api_key_env", "embedder_dim", "embedder_batch",
        "embedder_concurrency", "embedder_timeout_s", "embedder_retries", "llm_url", "llm_model", "llm_timeout_s",
        "llm_retries", "llm_tokens_per_day")


def default_home() -> Path:
    """Per-user data dir; as root, /var/lib/halomem (the embedded server loosens parent dirs' modes)."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/halomem")
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "halomem"


@dataclass(frozen=True)
class Settings:
    home: Path = field(default_factory=default_home)
    database_url: str | None = None
    read_database_url: str | None = None  # hot standbys for reads, comma-separated (db.replicas)
    embedder: str | None = None  # None: the store's recorded embedder, or the default for a new store
    ns: str | None = None
    sidecar_url: str | None = None
    isolate: str = "untrusted"  # which drivers run in a sandboxed worker: "untrusted" (not halomem's) or "all"
    driver_deadline_ms: int | str = 5000  # an isolated driver's plan() is killed after this
    driver_memory_mb: int | str = 1024  # an isolated worker's address-space limit
    # the embedder's options (halomem.embed.registry.EmbedderOptions): model, and the OpenAI-compatible
    # provider's base URL, the NAME of the env var holding its key (never the key), dim, batch, ...
    embedder_model: str | None = None
    embedder_url: str | None = None
    embedder_api_key_env: str | None = None
    embedder_dim: int | str | None = None
    embedder_batch: int | str | None = None
    embedder_concurrency: int | str | None = None
    embedder_timeout_s: float | str | None = None
    embedder_retries: int | str | None = None
    # formation's chat model (formation.chat_model): an OpenAI-compatible base URL and model; its key
    # is HALOMEM_LLM_API_KEY in the environment, never a setting
    llm_url: str | None = None
    llm_model: str | None = None
    llm_timeout_s: float | str | None = None
    llm_retries: int | str | None = None
    llm_tokens_per_day: int | str | None = None  # each namespace's model tokens a day (default 200,000)

    def __post_init__(self) -> None:
        object.__setattr__(self, "home", Path(self.home).expanduser())  # a str from library callers too

    def with_overrides(self, **flags: Any) -> "Settings":
        return replace(self, **{k: v for k, v in flags.items() if v is not None})


def number_setting(settings: Any, key: str, kind: type, default: Any, low: float) -> Any:
    """A numeric setting (it may come as text from the environment), at least ``low``, else ``default``
    when unset; ConfigError naming the key otherwise."""
    raw = getattr(settings, key, None)
    if raw in (None, ""):
        return default
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be a number, got {raw!r}") from None
    if value < low:
        raise ConfigError(f"{key} must be at least {low}, got {raw!r}")
    return value


def _from_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ConfigError(f"config file {path}: unknown key(s) {', '.join(unknown)}")
    return data


def load_settings(env: Mapping[str, str] | None = None, **flags: Any) -> Settings:
    env = os.environ if env is None else env
    from_env = {k: env[ENV_PREFIX + k.upper()] for k in KEYS if env.get(ENV_PREFIX + k.upper())}
    home = Path(flags.get("home") or from_env.get("home") or default_home()).expanduser()
    merged: dict[str, Any] = {**_from_file(home / "config.toml"), **from_env}
    merged["home"] = home
    settings = Settings(**{k: (Path(v) if k == "home" else v) for k, v in merged.items()})
    return settings.with_overrides(**{k: v for k, v in flags.items() if k != "home"})
