"""What a model reads: compact text renderings of tool results (the structured content carries every
field; this is the `text` block beside it). One line of facts per item, then its content as stored:
stored text is data, never instructions, so it is fenced by the item's own line, not interpreted."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping, Sequence


def age(iso: str | None, now: datetime | None = None) -> str:
    """'3d ago', '5h ago', 'just now': how fresh a fact is, at a glance."""
    if not iso:
        return "undated"
    try:
        then = datetime.fromisoformat(iso)
    except ValueError:
        return "undated"
    seconds = max(0.0, ((now or datetime.now(timezone.utc)) - then).total_seconds())
    for unit, size in (("y", 31_536_000), ("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def _facts(*parts: str | None) -> str:
    return ", ".join(p for p in parts if p)


def search(result: Mapping[str, Any]) -> str:
    hits: Sequence[Mapping[str, Any]] = result["hits"]
    head = f"{len(hits)} hit{'s' if len(hits) != 1 else ''} for {result['query']!r}"
    if result.get("fallback"):
        head += f" (driver {result['driver']}, fallback from {result['requested_driver']})"
    if result.get("as_of"):
        head += f" as memory stood at {result['as_of']} (memories only: concepts keep no history)"
    lines = [head + ("." if hits else ": nothing visible to you matches.")]
    for h in hits:
        where = h["id"] if h["tier"] == "L2" else f"concept {h['ref']}"
        source = h["source"] and "source " + h["source"]
        lines.append(f"{h['rank']}. [{_facts(where, h['namespace'], age(h.get('valid_from')), source)}]")
        lines.append(h["content"])
    return "\n".join(lines)


def memory(row: Mapping[str, Any]) -> str:
    state = "erased" if row.get("erased_at") else ("current" if not row.get("t_valid_to") else "superseded")
    since = "since " + age(row.get("t_valid_from")).replace(" ago", "")
    line = f"[{_facts(row['id'], row['namespace'], state, since, row.get('source') and 'source ' + row['source'])}]"
    return line + "\n" + (row.get("content") or "(erased)")


def memories(rows: Sequence[Mapping[str, Any]], empty: str = "No memories.") -> str:
    return "\n".join(memory(r) for r in rows) if rows else empty


def recent(page: Mapping[str, Any]) -> str:
    text = memories(page["memories"], "No memories visible to you.")
    if page.get("next_cursor"):
        text += f"\n(more: call recent with cursor={page['next_cursor']!r})"
    return text


def written(made: Mapping[str, Any]) -> str:
    near = [s["id"] for s in made.get("similar") or ()]
    if made.get("status") == "unchanged":
        return f"Already remembered as {made['id']} in {made['namespace']}: nothing new was written."
    if made.get("status") == "similar":
        return (f"Not written: it nearly repeats {', '.join(near)} in {made['namespace']}. If the fact changed, "
                f"supersede {near[0]} with the new text.")
    line = f"Remembered as {made['id']} in {made['namespace']}"
    if made.get("supersedes"):
        line = f"Superseded {made['supersedes']}: the new version is {made['id']} in {made['namespace']}"
    line += f" (source {made['source']})." if made.get("source") else "."
    if near:
        line += f" It nearly repeats {', '.join(near)}: if that fact changed, supersede it instead."
    return line


def written_many(batch: Mapping[str, Any]) -> str:
    items = batch.get("items") or []
    kept = sum(i.get("status") in ("unchanged", "similar") for i in items)
    near = sorted({s["id"] for i in items for s in i.get("similar") or ()})
    line = f"Remembered {batch['written']} memories in {batch['namespace']}: {', '.join(batch['ids']) or 'none'}."
    if kept:
        line += f" {kept} were already remembered (or nearly), nothing new written for them."
    if near:
        line += f" Near-copies of live memories: {', '.join(near)}."
    return line


def conversation(report: Mapping[str, Any]) -> str:
    """A conversation kept: turns written, and what extraction formed (or why it failed)."""
    lines = [f"Kept {report['written']} new turns in {report['namespace']} ({len(report['unchanged'])} already kept)."]
    extraction = report.get("extraction")
    if extraction:
        for done in extraction["extracted"]:
            lines.append(f"Session {done['session']}: {len(done['facts'])} facts written ("
                         + ", ".join(done["facts"]) + f"), {len(done['superseded'])} superseding older ones.")
        for failed in extraction["failed"]:
            lines.append(f"Session {failed['session']}: extraction failed ({failed['kind']}): {failed['reason']}")
    return "\n".join(lines)


def erased(done: Mapping[str, Any]) -> str:
    more = len(done["versions"]) - 1
    versions = f" and {more} earlier version{'s' if more != 1 else ''}" if more > 0 else ""
    return f"Erased {done['erased']}{versions} in {done['namespace']} (content-free tombstones remain)."


def whoami(me: Mapping[str, Any]) -> str:
    return (f"You are {me['name']} (principal {me['principal']}) in {me['namespace']}; you read "
            f"{', '.join(me['reads'])}; scopes: {', '.join(me['scopes'])}.")


def entities(found: Mapping[str, Any]) -> str:
    rows = found["entities"]
    if not rows:
        return "No entities registered where you can see them."
    return "\n".join(f"- {e['name']}" + (f" (also: {', '.join(e['aliases'])})" if e["aliases"] else "") for e in rows)


def concepts(found: Mapping[str, Any]) -> str:
    hits = found["hits"]
    if not hits:
        return "No concepts visible to you match."
    return "\n".join(f"{i}. [concept {h['ref']}]\n{h['content']}" for i, h in enumerate(hits, 1))
