"""Retriever cartridges (Apache-2.0, see LICENSE here) and the registry that mounts them.

A driver module may import only halomem.types, halomem.retrieval, halomem.embed and this package's
DriverUnavailableError. Ranking is theirs; custody (ACL, writes, audit) is the kernel's.
"""
from __future__ import annotations

from typing import Callable

from ..types import RetrieverDriver


class DriverUnavailableError(Exception):
    """Raised by a driver whose engine cannot serve: the kernel falls back to baseline and audits it."""


class DriverRegistry:
    """Mounted drivers by name. An unmounted name resolves to baseline, with a warning."""

    FALLBACK = "baseline"

    def __init__(self, warn: Callable[[str], None] = lambda message: None) -> None:
        self._drivers: dict[str, RetrieverDriver] = {}
        self.warn = warn

    def mount(self, driver: RetrieverDriver) -> None:
        name = getattr(driver, "name", None)
        if not isinstance(name, str) or not name or not callable(getattr(driver, "plan", None)):
            raise TypeError(f"{driver!r} is not a retriever driver (needs a name and plan())")
        self._drivers[name] = driver

    def unmount(self, name: str) -> None:
        if name == self.FALLBACK:
            raise ValueError("baseline is the fallback lane and cannot be unmounted")
        self._drivers.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._drivers)

    def has(self, name: str) -> bool:
        return name in self._drivers

    def get(self, name: str) -> RetrieverDriver:
        return self._drivers[name]

    def resolve(self, name: str) -> tuple[RetrieverDriver, bool]:
        """(driver, fell_back): an unmounted name serves baseline and says so."""
        if name in self._drivers:
            return self._drivers[name], False
        self.warn(f"driver {name!r} is not mounted; serving with {self.FALLBACK!r}")
        return self._drivers[self.FALLBACK], True
