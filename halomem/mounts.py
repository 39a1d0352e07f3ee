"""Which retriever drivers a kernel mounts, and how.

halomem's own drivers run in-process (``isolate = "all"`` runs them in sandboxed workers too,
except baseline, the fallback lane that must always answer). Every other cartridge (entry points
of the ``halomem.drivers`` group) is mounted isolated without being imported here: its code only
ever runs inside a confined worker (halomem.sandbox).
"""
from __future__ import annotations

import logging
from importlib import import_module
from importlib.metadata import entry_points
from urllib.parse import urlsplit

from .config import Settings
from .drivers import DriverRegistry
from .errors import ConfigError
from .sandbox.cartridge import ENTRY_POINT_GROUP, from_entry_point, from_module, pick_driver
from .sandbox.isolated import IsolatedDriver, Limits

log = logging.getLogger("halomem")
BUILTINS = {"baseline": "halomem.drivers.baseline", "fusion": "halomem.drivers.fusion",
            "graph": "halomem.drivers.graph", "keyword": "halomem.drivers.keyword"}
ISOLATE_MODES = ("untrusted", "all")


def limits(settings: Settings) -> Limits:
    try:
        deadline_ms, memory_mb = int(settings.driver_deadline_ms), int(settings.driver_memory_mb)
    except (TypeError, ValueError):
        raise ConfigError("driver_deadline_ms and driver_memory_mb must be whole numbers") from None
    if not 10 <= deadline_ms <= 600_000 or not 64 <= memory_mb <= 1 << 20:
        raise ConfigError("driver_deadline_ms must be 10..600000 and driver_memory_mb 64..1048576")
    return Limits(deadline_s=deadline_ms / 1000, memory_bytes=memory_mb << 20)


def mount_drivers(registry: DriverRegistry, settings: Settings, *, plugins: bool = True) -> None:
    if settings.isolate not in ISOLATE_MODES:
        raise ConfigError(f"isolate must be one of {', '.join(ISOLATE_MODES)} (got {settings.isolate!r})")
    bounds = limits(settings)
    isolate_all = settings.isolate == "all"
    for name, module in BUILTINS.items():
        if isolate_all and name != DriverRegistry.FALLBACK:
            registry.mount(IsolatedDriver(from_module(module, name), bounds))
        else:
            registry.mount(pick_driver(import_module(module), module))
    if settings.sidecar_url:
        _mount_sidecar(registry, settings.sidecar_url, bounds if isolate_all else None)
    if plugins:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                registry.mount(IsolatedDriver(from_entry_point(ep), bounds))
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not fail boot
                log.warning("driver plugin %r not mounted: %s", ep.name, exc)


def _mount_sidecar(registry: DriverRegistry, url: str, bounds: Limits | None) -> None:
    """mem0 is mounted only when configured; isolated, it may connect to the sidecar's port only."""
    try:
        if bounds is None:
            from .drivers.mem0 import Mem0Driver

            registry.mount(Mem0Driver(url))
            return
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        registry.mount(IsolatedDriver(from_module("halomem.drivers.mem0", "mem0", init_args=(url,),
                                                  net_ports=(port,)), bounds))
    except Exception as exc:  # noqa: BLE001
        log.warning("driver 'mem0' not mounted: %s", exc)


def close_drivers(registry: DriverRegistry) -> None:
    for name in registry.names():
        driver = registry.get(name)
        if isinstance(driver, IsolatedDriver):
            driver.close()
