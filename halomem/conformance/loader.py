"""Finding the driver to certify in-process: a built-in name, a .py path, or an entry-point name.

In-process loading runs the module's code in this process: the conformance kit uses it only for
halomem's own drivers and for objects a cartridge author hands the pytest plugin in their own
suite. `halomem conformance PATH|ENTRY-POINT` certifies through the sandbox instead (kit.py).
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path

from ..errors import DriverError
from ..sandbox.cartridge import find_entry_point, instantiate_entry_point, module_from_path, pick_driver
from ..types import RetrieverDriver

DRIVERS_DIR = Path(__file__).resolve().parent.parent / "drivers"


@dataclass
class LoadedDriver:
    driver: RetrieverDriver
    source_path: Path | None
    origin: str


def is_builtin(target: str) -> bool:
    return target.isidentifier() and target != "view" and (DRIVERS_DIR / f"{target}.py").is_file()


def load_driver(target: str) -> LoadedDriver:
    if target.endswith(".py") or "/" in target:
        path = Path(target)
        if not path.is_file():
            raise DriverError(f"no driver file {path}")
        return LoadedDriver(pick_driver(module_from_path(path), str(path)), path, str(path))
    if is_builtin(target):
        try:
            module = importlib.import_module(f"halomem.drivers.{target}")
        except Exception as exc:
            raise DriverError(f"halomem.drivers.{target}: import failed: {type(exc).__name__}: {exc}") from None
        return LoadedDriver(pick_driver(module, f"halomem/drivers/{target}.py"), DRIVERS_DIR / f"{target}.py",
                            f"halomem.drivers.{target}")
    ep = find_entry_point(target)
    if ep is not None:
        obj = instantiate_entry_point(ep)
        source = inspect.getsourcefile(type(obj))
        return LoadedDriver(obj, Path(source) if source else None, f"entry point {ep.value}")
    raise DriverError(f"no driver named {target!r} (not in halomem/drivers/, not a .py path, not an entry point)")
