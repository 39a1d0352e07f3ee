"""Passages: a memory longer than its embedder's window is also embedded per overlapping window, so
the vector lane can score it by its best passage (index.reader.vector_search). A fact in the last
paragraph of a long document reaches the vector lane; without passages the window cut it off (a
transformer) or the mean over the whole text drowned it (a static model)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

OVERLAP_FRACTION = 0.25


def passage_chars(embedder: Any) -> int | None:
    """The embedder's window in characters (None: it embeds whole texts, as `hash` does)."""
    size = getattr(embedder, "passage_chars", None)
    return int(size) if size else None


def split(text: str, size: int | None) -> list[str]:
    """Overlapping windows of at most ``size`` characters, cut at whitespace where there is some,
    covering all of ``text``; [] when the text fits one window (the memory's own vector covers it)."""
    if not size or len(text) <= size:
        return []
    step = max(1, int(size * (1 - OVERLAP_FRACTION)))
    out: list[str] = []
    start = 0
    while True:
        end = min(len(text), start + size)
        if end < len(text):  # end at the last whitespace inside the window, when one is near
            cut = text.rfind(" ", start + step // 2, end)
            end = cut if cut > start else end
        out.append(text[start:end].strip() or text[start:end])
        if end >= len(text):
            return out
        nxt = start + step
        space = text.find(" ", nxt, min(len(text), nxt + size // 10))
        start = min(space + 1 if space >= 0 else nxt, end)


def pack(blocks: Sequence[tuple[str, str]], text: str, size: int | None) -> list[str]:
    """Passages of a structured document (intake.document.Document.blocks: each paragraph with the
    title and heading it falls under): consecutive paragraphs under one heading packed up to
    ``size`` characters, each passage led by its heading's context, a paragraph longer than a window
    cut as ``split`` cuts. The paragraphs within the document's first window are left out: the
    memory's own vector covers them. [] when ``text`` fits one window, as for any memory."""
    if not size or len(text) <= size:
        return []
    out: list[str] = []
    context, body = None, ""
    covered = size  # the head of the text the memory's own vector already covers
    seen = 0
    for ctx, paragraph in blocks:
        seen += len(paragraph) + 2
        if seen <= covered:
            continue
        lead = f"{ctx}\n" if ctx else ""
        if context == ctx and body and len(lead) + len(body) + 2 + len(paragraph) <= size:
            body += "\n\n" + paragraph
            continue
        if body:
            out.append((f"{context}\n" if context else "") + body)
        context, body = ctx, ""
        if len(lead) + len(paragraph) <= size:
            body = paragraph
        else:
            out.extend(lead + piece for piece in split(paragraph, max(size - len(lead), size // 2)))
    if body:
        out.append((f"{context}\n" if context else "") + body)
    return out


@dataclass(frozen=True)
class Embedded:
    """A memory's vector and its passages' vectors ([] when it fits the window), and whose they are."""

    vector: list[float]
    passages: list[list[float]]
    by: str  # the embedder's name (write.vector_swap checks it against the store's)


def embed_memories(embedder: Any, texts: Sequence[str],
                   structures: Sequence[Sequence[tuple[str, str]] | None] | None = None) -> list[Embedded]:
    """Each text's vector and passage vectors, in one call to the embedder (one request when remote);
    bulk work at a lower CPU priority, pausing for other callers (embed.low_priority). A text with a
    structure (a document's blocks) is cut into passages along it (``pack``), others by window."""
    from .low_priority import BULK_CHARS, embed_in_chunks, run_bulk

    size = passage_chars(embedder)
    structures = structures or [None] * len(texts)
    pieces = [pack(blocks, t, size) if blocks else split(t, size) for t, blocks in zip(texts, structures)]
    every = [*texts, *(p for ps in pieces for p in ps)]
    chars = 0 if getattr(embedder, "remote", False) else sum(len(t) for t in texts)  # a service's CPU is not ours
    work = (lambda: embed_in_chunks(embedder.embed, every)) if chars > BULK_CHARS else (lambda: embedder.embed(every))
    vectors = iter(run_bulk(work, chars))
    whole = [next(vectors) for _ in texts]
    return [Embedded(v, [next(vectors) for _ in ps], embedder.name) for v, ps in zip(whole, pieces)]
