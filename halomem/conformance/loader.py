"""Finding the driver to certify: a built-in name, a .py path, or an entry-point name.

From the module, the first zero-argument-constructible class with plan() (in definition order),
or a ready-made instance, is the driver. A class whose constructor needs arguments is skipped and
reported, never crashed on.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import DriverError
from ..types import RetrieverDriver

ENTRY_POINT_GROUP = "halomem.drivers"
DRIVERS_DIR = Path(__file__).resolve().parent.parent / "drivers"


@dataclass
class LoadedDriver:
    driver: RetrieverDriver
    source_path: Path | None
    origin: str


def _needs_arguments(cls: type) -> str | None:
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return None
    required = [p.name for p in sig.parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return ", ".join(required) or None


def _is_driver_like(obj: Any) -> bool:
    return callable(getattr(obj, "plan", None))


def pick_driver(module: ModuleType, origin: str) -> RetrieverDriver:
    skipped: list[str] = []
    for name, obj in list(vars(module).items()):
        if name.startswith("_"):
            continue
        if isinstance(obj, type):
            if obj.__module__ != module.__name__ or not _is_driver_like(obj):
                continue
            needs = _needs_arguments(obj)
            if needs:
                skipped.append(f"{name} needs constructor arguments ({needs})")
                continue
            try:
                return obj()
            except Exception as exc:
                raise DriverError(f"{origin}: driver class {name} could not be constructed: "
                                  f"{type(exc).__name__}: {exc}") from None
        elif _is_driver_like(obj) and not inspect.ismodule(obj) and not inspect.isfunction(obj):
            return obj
    why = "; ".join(skipped) if skipped else "no class with plan() and no ready-made instance"
    raise DriverError(f"{origin}: not loadable: {why}")


def _load_path(path: Path) -> LoadedDriver:
    if not path.is_file():
        raise DriverError(f"no driver file {path}")
    name = f"halomem_cartridge_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise DriverError(f"{path}: not a loadable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise DriverError(f"{path}: import failed: {type(exc).__name__}: {exc}") from None
    return LoadedDriver(pick_driver(module, str(path)), path, str(path))


def load_driver(target: str) -> LoadedDriver:
    if target.endswith(".py") or "/" in target:
        return _load_path(Path(target))
    builtin = DRIVERS_DIR / f"{target}.py"
    if target.isidentifier() and builtin.is_file() and target not in ("view",):
        try:
            module = importlib.import_module(f"halomem.drivers.{target}")
        except Exception as exc:
            raise DriverError(f"halomem.drivers.{target}: import failed: {type(exc).__name__}: {exc}") from None
        return LoadedDriver(pick_driver(module, f"halomem/drivers/{target}.py"), builtin, f"halomem.drivers.{target}")
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == target:
            try:
                obj = ep.load()
            except Exception as exc:
                raise DriverError(f"entry point {target!r}: load failed: {type(exc).__name__}: {exc}") from None
            if isinstance(obj, type):
                needs = _needs_arguments(obj)
                if needs:
                    raise DriverError(f"entry point {target!r}: not loadable: {obj.__name__} needs constructor "
                                      f"arguments ({needs})")
                obj = obj()
            source = inspect.getsourcefile(type(obj))
            return LoadedDriver(obj, Path(source) if source else None, f"entry point {ep.value}")
    raise DriverError(f"no driver named {target!r} (not in halomem/drivers/, not a .py path, not an entry point)")
