"""safetensors files read without a framework: the static table and the encoder's weights.

The format is an 8-byte header length, a JSON header of dtype / shape / offsets per tensor, then raw
little-endian data; a tensor is read row by row with struct (a query in plain Python) or as a numpy
view.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

_CODES = {"I8": "b", "F16": "e", "F32": "f", "F64": "d", "I32": "i", "I64": "q"}  # safetensors dtype -> struct


class Tensor:
    """One tensor of a safetensors file, read without a framework (the format: an 8-byte header
    length, a JSON header of dtype/shape/offsets, then raw little-endian data)."""

    def __init__(self, data: memoryview, meta: dict[str, Any]) -> None:
        self.dtype, self.shape = meta["dtype"], [int(n) for n in meta["shape"]]
        start, end = meta["data_offsets"]
        self.data = data[start:end]
        width = self.shape[1] if len(self.shape) == 2 else 1
        self._row = struct.Struct(f"<{width}{_CODES[self.dtype]}")

    def row(self, i: int) -> tuple:
        return self._row.unpack_from(self.data, i * self._row.size)

    def numpy(self, np: Any) -> Any:
        kind = {"I8": np.int8, "F16": np.float16, "F32": np.float32, "F64": np.float64, "I32": np.int32,
                "I64": np.int64}[self.dtype]
        return np.frombuffer(self.data, dtype=np.dtype(kind).newbyteorder("<")).reshape(self.shape)


def read_safetensors(path: Path) -> dict[str, Tensor]:
    return parse_safetensors(path.read_bytes(), path.name)


def parse_safetensors(data: bytes, name: str = "safetensors") -> dict[str, Tensor]:
    """The tensors of a file already read (the encoder's weights are hashed from the same bytes)."""
    raw = memoryview(data)
    size = struct.unpack_from("<Q", raw, 0)[0]
    header = json.loads(bytes(raw[8:8 + size]))
    body = raw[8 + size:]
    tensors = {name: Tensor(body, meta) for name, meta in header.items() if name != "__metadata__"}
    if any(t.dtype not in _CODES for t in tensors.values()):
        raise ValueError(f"unsupported dtype in {name}")
    return tensors
