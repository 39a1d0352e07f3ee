"""Which retriever drivers a kernel mounts, and how.

halomem's own drivers run in-process (``isolate = "all"`` runs them in sandboxed workers too,
except baseline, the fallback lane that must always answer). Every other cartridge (entry points
of the ``halomem.drivers`` group) is mounted isolated without being imported here: its code only
ever runs inside a confined worker (halomem.sandbox).
"""
from __future__ import annotations

import logging
from functools import partial
from importlib import import_module
from typing import TYPE_CHECKING, Any

from .config import Settings
from .drivers import DriverRegistry
from .errors import ConfigError

if TYPE_CHECKING:
    from .sandbox.isolated import Limits

log = logging.getLogger("halomem")
BUILTINS = {"baseline": "halomem.drivers.baseline:BaselineDriver", "fusion": "halomem.drivers.fusion:FusionDriver",
            "graph": "halomem.drivers.graph:GraphDriver", "keyword": "halomem.drivers.keyword:KeywordDriver"}
ISOLATE_MODES = ("untrusted", "all")


def _bounds(settings: Settings) -> dict[str, Any]:
    """The sandbox limits the settings ask for, checked (a bad value fails boot, not a later search)."""
    try:
        deadline_ms, memory_mb = int(settings.driver_deadline_ms), int(settings.driver_memory_mb)
    except (TypeError, ValueError):
        raise ConfigError("driver_deadline_ms and driver_memory_mb must be whole numbers") from None
    if not 10 <= deadline_ms <= 600_000 or not 64 <= memory_mb <= 1 << 20:
        raise ConfigError("driver_deadline_ms must be 10..600000 and driver_memory_mb 64..1048576")
    return {"deadline_s": deadline_ms / 1000, "memory_bytes": memory_mb << 20}


def limits(settings: Settings) -> "Limits":
    from .sandbox.isolated import Limits

    return Limits(**_bounds(settings))


def mount_drivers(registry: DriverRegistry, settings: Settings, *, plugins: bool = True) -> None:
    """Built-ins by name, each imported when first used; plugins found when a name is not a built-in."""
    if settings.isolate not in ISOLATE_MODES:
        raise ConfigError(f"isolate must be one of {', '.join(ISOLATE_MODES)} (got {settings.isolate!r})")
    _bounds(settings)
    isolate_all = settings.isolate == "all"
    for name, target in BUILTINS.items():
        if isolate_all and name != DriverRegistry.FALLBACK:
            registry.mount_lazy(name, partial(_isolated_module, target, name, settings))
        else:
            registry.mount_lazy(name, partial(_in_process, target))
    if settings.sidecar_url:
        _mount_sidecar(registry, settings.sidecar_url, limits(settings) if isolate_all else None)
    if plugins:
        registry.discover_later(partial(_mount_plugins, registry, settings))


def _in_process(target: str) -> Any:
    module, cls = target.split(":")
    return getattr(import_module(module), cls)()


def _isolated_module(target: str, name: str, settings: Settings) -> Any:
    from .sandbox.cartridge import from_module
    from .sandbox.isolated import IsolatedDriver

    return IsolatedDriver(from_module(target.split(":")[0], name), limits(settings))


def _mount_plugins(registry: DriverRegistry, settings: Settings) -> None:
    """Entry points of the halomem.drivers group, mounted isolated and never imported here."""
    from importlib.metadata import entry_points

    from .sandbox.cartridge import ENTRY_POINT_GROUP, from_entry_point
    from .sandbox.isolated import IsolatedDriver

    bounds = limits(settings)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            registry.mount(IsolatedDriver(from_entry_point(ep), bounds))
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not fail boot
            log.warning("driver plugin %r not mounted: %s", ep.name, exc)


def _mount_sidecar(registry: DriverRegistry, url: str, bounds: "Limits | None") -> None:
    """mem0 is mounted only when configured; isolated, it may connect to the sidecar's port only."""
    try:
        if bounds is None:
            from .drivers.mem0 import Mem0Driver

            registry.mount(Mem0Driver(url))
            return
        from urllib.parse import urlsplit

        from .sandbox.cartridge import from_module
        from .sandbox.isolated import IsolatedDriver

        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        registry.mount(IsolatedDriver(from_module("halomem.drivers.mem0", "mem0", init_args=(url,),
                                                  net_ports=(port,)), bounds))
    except Exception as exc:  # noqa: BLE001
        log.warning("driver 'mem0' not mounted: %s", exc)


def close_drivers(registry: DriverRegistry) -> None:
    """Release what the built drivers hold (an isolated one's sandbox workers; an unbuilt one has none)."""
    for driver in registry.built():
        close = getattr(driver, "close", None)
        if callable(close):
            close()
