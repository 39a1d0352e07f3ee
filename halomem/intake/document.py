"""A document as intake reads it: a title and sections of paragraphs, whatever the file format.

The memory a document becomes is its text (the title, then each section's heading and
paragraphs); its structure also shapes its passages (embed.passages.pack): a long document is
embedded per passage cut at its headings and paragraphs, each passage led by the document's title
and the heading it falls under, so a fact deep in a section is found with its context.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_BLANK = re.compile(r"\n\s*\n+")
_SPACES = re.compile(r"[ \t\f\v\r]+")


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, each with its runs of spaces collapsed (line breaks kept)."""
    out = []
    for block in _BLANK.split(text):
        lines = [_SPACES.sub(" ", line).strip() for line in block.splitlines()]
        joined = "\n".join(line for line in lines if line)
        if joined:
            out.append(joined)
    return out


@dataclass(frozen=True)
class Section:
    heading: str  # "" for what comes before the first heading
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class Document:
    title: str | None
    sections: tuple[Section, ...]
    format: str  # markdown, text, rst, html, pdf

    @property
    def text(self) -> str:
        """The memory's text: the title, then each section's heading and paragraphs."""
        parts = [self.title] if self.title else []
        for section in self.sections:
            if section.heading and section.heading != self.title:
                parts.append(section.heading)
            parts.extend(section.paragraphs)
        return "\n\n".join(parts)

    @property
    def empty(self) -> bool:
        return not any(s.paragraphs for s in self.sections)

    def blocks(self) -> list[tuple[str, str]]:
        """(context, paragraph) pairs, in order: each paragraph with the title and heading it falls
        under (what a passage is led by)."""
        out = []
        for section in self.sections:
            context = " > ".join(p for p in (self.title, section.heading) if p and p != "")
            if section.heading == self.title:
                context = self.title or ""
            out.extend((context, paragraph) for paragraph in section.paragraphs)
        return out


def from_text(text: str, fmt: str, title: str | None = None) -> Document:
    """A document with no headings of its own: its paragraphs in one section."""
    return Document(title, (Section("", tuple(paragraphs(text))),), fmt)
