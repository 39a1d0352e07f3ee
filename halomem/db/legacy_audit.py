"""Reading the free-text ``detail`` of audit rows written before v13, once, for the migration (db.migrations v13).

Rows are typed records now (audit.log); this is the only reader of the old text, and it runs once
per row, when the store is upgraded: the fields it finds are stored as data beside the text, and
the row's hash still covers the text (its ``row_format`` 1). A value that starts as JSON (a
string, a list, an object) is read whole, so words inside a caller's text are never taken for
fields of their own.
"""
from __future__ import annotations

import json
from typing import Any

OUTCOMES = ("ok", "refused", "failed", "cleared")


def _value(text: str) -> Any:
    if text.isdigit():
        return int(text)
    try:
        number = float(text)
    except ValueError:
        return text
    return number if text.lower() not in ("nan", "inf", "-inf", "infinity", "-infinity") else text


def parse(action: str, detail: str) -> dict[str, Any]:
    """The fields of one legacy row's detail."""
    if action == "policy" and detail.startswith("policy ok {"):
        try:
            return {"outcome": "ok", "policy": json.loads(detail[len("policy ok "):])}
        except ValueError:
            pass
    decoder = json.JSONDecoder()
    prefix: list[str] = []
    out: dict[str, Any] = {}
    last = None
    at = 0
    while at < len(detail):
        end = detail.find(" ", at)
        end = len(detail) if end < 0 else end
        key, eq, value = detail[at:end].partition("=")
        if eq and key and value[:1] in ('"', "[", "{"):
            try:
                decoded, stop = decoder.raw_decode(detail, at + len(key) + 1)
                out[key], end = decoded, stop
            except ValueError:
                out[key] = value
            last = key
        elif eq and key:
            out[key], last = _value(value), key
        elif not out:
            prefix.append(detail[at:end])
        elif isinstance(out.get(last), str):  # free text after a field: the rest of its value
            out[last] += " " + detail[at:end]
        at = end + 1
    outcome = next((w for w in prefix if w in OUTCOMES), None)
    record: dict[str, Any] = {}
    if outcome is not None:
        before = prefix[:prefix.index(outcome)]
        after = prefix[prefix.index(outcome) + 1:]
        if before and " ".join(before) != action:
            record["route"] = " ".join(before)
        record["outcome"] = outcome
        if after:
            record["note"] = " ".join(after)
    elif prefix:
        record["note"] = " ".join(prefix)
    for name in ("query", "driver_version", "request_id"):  # text that may look like a number
        if name in out and not isinstance(out[name], str):
            out[name] = str(out[name])
    record.update(out)
    return record
