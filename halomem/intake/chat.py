"""Conversations: `halomem ingest --format chat FILE` turns each turn into a memory.

A line of the JSONL file is one turn, ``{"session", "time", "speaker" or "role", "content"}`` (``text``
is read as ``content``, ``name`` beside a ``role`` as the speaker), or one conversation in the OpenAI
messages shape, ``{"messages": [{"role", "content", "name"?}, ...], "session"?, "time"?}``. A turn
becomes a memory of the text ``[time] speaker: content`` (what the LoCoMo bench stores), whose
source is its session (so a turn is read beside the turns around it, in order: retrieval.context)
and whose provenance names the session, the speaker, when it was said and its place in the session.
Turns are keyed ``session/n``: ingesting the file again writes only the turns that are new or
changed. Every line is checked before anything is written: a bad line refuses the file, listed
with the others (or is skipped, with --skip-bad); a turn's text is data, whatever it holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import HalomemError, IngestError
from ..limits import MAX_CONTENT_CHARS, MAX_SESSION_CHARS, MAX_SOURCE_CHARS, MAX_SPEAKER_CHARS
from ..write.bulk import ParsedRow
from ..write.ingest import jsonl_records
from ..write.validate import check_content

SHOWN_BAD_LINES = 20
TURN_FIELDS = {"session", "time", "speaker", "role", "name", "content", "text"}
CONVERSATION_FIELDS = {"messages", "session", "id", "time"}


@dataclass(frozen=True)
class Turn:
    session: str
    speaker: str
    content: str
    time: str | None
    role: str | None = None


def _text(value: Any, what: str, limit: int, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and what == "session":
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise IngestError(f"{what} must be non-empty text")
    if len(value) > limit or any(ord(c) < 32 for c in value):
        raise IngestError(f"{what} must be at most {limit} printable characters")
    return value.strip()


def _time(value: Any) -> str | None:
    """An ISO 8601 time (kept as written, normalised), or the free text a transcript gives ("1:56 pm
    on 8 May, 2023"), kept as it is: a time is said, not computed with."""
    if value is None or value == "":
        return None
    text = _text(value, "time", 64)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat()
    except ValueError:
        return text


def _turns(record: dict[str, Any], number: int, default_session: str) -> list[Turn]:
    if "messages" in record:
        unknown = sorted(set(record) - CONVERSATION_FIELDS)
        if unknown:
            raise IngestError(f"unknown field(s) {', '.join(unknown)} in a conversation (allowed: messages, "
                              "session, id, time)")
        session = _text(record.get("session", record.get("id", f"{default_session}-{number}")), "session",
                        MAX_SESSION_CHARS)
        when = _time(record.get("time"))
        messages = record["messages"]
        if not isinstance(messages, list) or not messages:
            raise IngestError("messages must be a non-empty list")
        out = []
        for i, message in enumerate(messages, 1):
            if not isinstance(message, dict):
                raise IngestError(f"message {i} must be an object")
            out.append(_turn({**message, "session": session, "time": message.get("time", when)}, f"message {i}: "))
        return out
    return [_turn({"session": default_session, **record}, "")]


def _turn(record: dict[str, Any], where: str) -> Turn:
    unknown = sorted(set(record) - TURN_FIELDS)
    if unknown:
        raise IngestError(f"{where}unknown field(s) {', '.join(unknown)} (allowed: session, time, speaker or role,"
                          " name, content)")
    try:
        content = record.get("content", record.get("text"))
        if isinstance(content, list):  # OpenAI content parts: their text
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
        role = _text(record.get("role"), "role", MAX_SPEAKER_CHARS, required=False)
        speaker = record.get("speaker") or record.get("name") or role
        return Turn(_text(record.get("session"), "session", MAX_SESSION_CHARS),
                    _text(speaker, "speaker (or role)", MAX_SPEAKER_CHARS), check_content(content),
                    _time(record.get("time")), role)
    except HalomemError as exc:
        raise IngestError(f"{where}{exc}") from None


def parse_chat(raw: bytes, label: str, skip_bad: bool = False) -> tuple[list[ParsedRow], list[tuple[int, str]]]:
    """The turns of a chat file as rows for the write path, and its bad lines."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise IngestError(f"{label}:{line}: not UTF-8 text") from None
    default_session = label.rsplit("/", 1)[-1].rsplit(".", 1)[0] or "chat"
    turns: list[tuple[int, Turn]] = []
    bad: list[tuple[int, str]] = []
    for number, record in jsonl_records(text):
        try:
            if isinstance(record, str):
                raise IngestError(record)
            turns.extend((number, t) for t in _turns(record, number, default_session))
        except HalomemError as exc:
            bad.append((number, str(exc)))
    if bad and not skip_bad:
        listed = "; ".join(f"{label}:{n}: {why}" for n, why in bad[:SHOWN_BAD_LINES])
        more = f" (+{len(bad) - SHOWN_BAD_LINES} more)" if len(bad) > SHOWN_BAD_LINES else ""
        raise IngestError(f"{len(bad)} bad line(s): {listed}{more}; nothing was ingested"
                          " (fix them, or skip bad lines: --skip-bad)")
    if not turns:
        raise IngestError(f"{label}: no turns to ingest" + (f" (every line is bad: {len(bad)})" if bad else ""))
    rows = []
    places: dict[str, int] = {}
    for number, turn in turns:
        place = places[turn.session] = places.get(turn.session, 0) + 1
        said = f"[{turn.time}] " if turn.time else ""
        content = f"{said}{turn.speaker}: {turn.content}"
        if len(content) > MAX_CONTENT_CHARS:
            content = content[:MAX_CONTENT_CHARS]
        provenance = {"session": turn.session, "speaker": turn.speaker, "time": turn.time, "turn": place,
                      **({"role": turn.role} if turn.role else {}), "format": "chat"}
        rows.append(ParsedRow(number, content, f"session:{turn.session}"[:MAX_SOURCE_CHARS], provenance,
                              f"session:{turn.session}/{place}"[:MAX_SOURCE_CHARS]))
    return rows, bad
