"""Retriever cartridges (Apache-2.0, see LICENSE here) and the registry that mounts them.

A driver module may import only halomem.types, halomem.retrieval, halomem.embed and this package's
DriverUnavailableError. Ranking is theirs; custody (ACL, writes, audit) is the kernel's.
"""
from __future__ import annotations

import re
import threading
from typing import Callable

from ..types import RetrieverDriver


class DriverUnavailableError(Exception):
    """Raised by a driver whose engine cannot serve: the kernel falls back to baseline and audits it."""


class DriverRegistry:
    """Mounted drivers by name. An unmounted name resolves to baseline, with a warning.

    A driver may be mounted by name with a factory that builds it on first use, and plugin
    discovery may be deferred until a name is looked up that is not known yet: a one-shot
    `halomem search` imports only the driver that serves it. Building and discovering hold a
    lock: a server's first concurrent requests build a driver once and never see a half-done
    discovery.
    """

    FALLBACK = "baseline"

    def __init__(self, warn: Callable[[str], None] = lambda message: None) -> None:
        self._drivers: dict[str, RetrieverDriver] = {}
        self._factories: dict[str, Callable[[], RetrieverDriver]] = {}
        self._discoveries: list[Callable[[], None]] = []
        self._lock = threading.RLock()
        self.warn = warn

    def mount(self, driver: RetrieverDriver) -> None:
        name = getattr(driver, "name", None)
        if not isinstance(name, str) or not name or not callable(getattr(driver, "plan", None)):
            raise TypeError(f"{driver!r} is not a retriever driver (needs a name and plan())")
        self._factories.pop(name, None)
        self._drivers[name] = driver

    def mount_lazy(self, name: str, factory: Callable[[], RetrieverDriver]) -> None:
        """Mount ``name``; ``factory`` builds the driver the first time it is asked for."""
        self._drivers.pop(name, None)
        self._factories[name] = factory

    def discover_later(self, discover: Callable[[], None]) -> None:
        """Run ``discover`` (which mounts more drivers) once, when an unknown name or the full list
        is first asked for."""
        self._discoveries.append(discover)

    def _discover(self) -> None:
        with self._lock:
            while self._discoveries:
                self._discoveries.pop(0)()

    def unmount(self, name: str) -> None:
        if name == self.FALLBACK:
            raise ValueError("baseline is the fallback lane and cannot be unmounted")
        self._discover()
        self._drivers.pop(name, None)
        self._factories.pop(name, None)

    def names(self) -> list[str]:
        self._discover()
        with self._lock:
            return sorted({*self._drivers, *self._factories})

    def has(self, name: str) -> bool:
        if name not in self._drivers and name not in self._factories:
            self._discover()
        return name in self._drivers or name in self._factories

    def get(self, name: str) -> RetrieverDriver:
        if not self.has(name):
            raise KeyError(name)
        with self._lock:
            if name in self._factories:
                self.mount(self._factories[name]())
            return self._drivers[name]

    def version(self, name: str) -> str:
        """What the audit records beside a driver's name, so a replay can tell it changed: the
        version the kernel knows (an isolated cartridge's distribution or file digest, halomem's own
        for built-ins), else the driver's ``version`` attribute; one word, bounded."""
        driver = self.get(name)
        known = getattr(driver, "version", None)
        if not isinstance(known, str) or not known:
            from .. import __version__

            known = __version__ if type(driver).__module__.startswith("halomem.") else "unversioned"
        return re.sub(r"[^A-Za-z0-9._+:-]", "_", known)[:64]

    def built(self) -> list[RetrieverDriver]:
        """The drivers built so far (what there is to close)."""
        with self._lock:
            return list(self._drivers.values())

    def resolve(self, name: str) -> tuple[RetrieverDriver, bool]:
        """(driver, fell_back): an unmounted name serves baseline and says so."""
        if self.has(name):
            return self.get(name), False
        self.warn(f"driver {name!r} is not mounted; serving with {self.FALLBACK!r}")
        return self.get(self.FALLBACK), True
