"""Reading a file's text and structure, one well-kept parser per format: markdown-it-py (Markdown),
docutils (reStructuredText, with file inclusion and raw output off), BeautifulSoup over the
standard library's HTML parser (text only: scripts, styles and other non-text elements dropped),
pypdf (a PDF's text layer). Plain text is split at blank lines.

``read`` never raises for what a file holds: a file that cannot be read as a document (binary,
an unknown type, undecodable text, an encrypted or broken PDF) is a ``Skip`` with its reason.
"""
from __future__ import annotations

import functools
import io
from dataclasses import dataclass
from typing import Callable

from .document import Document, Section, from_text, paragraphs

FORMATS = {".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".txt": "text", ".text": "text",
           ".rst": "rst", ".rest": "rst", ".html": "html", ".htm": "html", ".xhtml": "html", ".pdf": "pdf"}
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # a file larger than this is skipped, unread
_SNIFF = 8192  # bytes looked at for a NUL: text has none, binary nearly always does


@dataclass(frozen=True)
class Skip:
    """A file intake did not turn into a memory, and why (listed in every report)."""

    reason: str


def format_of(name: str, given: str | None = None) -> str | None:
    """The document format a file name (or ``given``, a --format) names, or None."""
    if given:
        return given if given in set(FORMATS.values()) else None
    dot = name.rfind(".")
    return FORMATS.get(name[dot:].lower()) if dot >= 0 else None


def read(data: bytes, name: str, fmt: str | None = None) -> Document | Skip:
    """The document in ``data`` (a file called ``name``), or why it is skipped."""
    kind = format_of(name, fmt)
    if kind is None:
        dot = name.rfind(".")
        return Skip(f"unknown type {name[dot:]!r}" if dot >= 0 else "unknown type (no extension)")
    if len(data) > MAX_DOCUMENT_BYTES:
        return Skip(f"larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MiB")
    if kind == "pdf":
        return _pdf(data)
    if b"\x00" in data[:_SNIFF] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return Skip("binary (holds NUL bytes)")
    text = _decode(data)
    if text is None:
        return Skip("not UTF-8 text (undecodable)")
    try:
        document = _READERS[kind](text)
    except RecursionError:
        return Skip(f"{kind} nested too deeply to read")
    return document


def _decode(data: bytes) -> str | None:
    for encoding in (("utf-16",) if data.startswith((b"\xff\xfe", b"\xfe\xff")) else ("utf-8-sig",)):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            return None
        return text.replace("\x00", "")
    return None


# --- Markdown ------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _markdown_parser():  # noqa: ANN202 - markdown_it.MarkdownIt, built once
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def _markdown(text: str) -> Document:
    tokens = _markdown_parser().parse(text)
    sections: list[tuple[str, list[str]]] = [("", [])]
    title: str | None = None
    row: list[str] | None = None
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.type == "heading_open":
            heading = _inline_text(tokens[i + 1]) if i + 1 < len(tokens) else ""
            if title is None and (token.tag == "h1" or not any(body for _, body in sections)):
                title = heading
            sections.append((heading, []))
            i += 3
            continue
        if token.type == "tr_open":
            row = []
        elif token.type == "tr_close" and row is not None:
            sections[-1][1].append(" | ".join(row))
            row = None
        elif token.type == "inline" and row is not None:
            row.append(_inline_text(token))
        elif token.type == "inline":
            paragraph = _inline_text(token).strip()
            if paragraph:
                sections[-1][1].append(paragraph)
        elif token.type in ("fence", "code_block") and token.content.strip():
            sections[-1][1].append(token.content.rstrip("\n"))
        elif token.type == "html_block":
            sections[-1][1].extend(_html(token.content).text.split("\n\n") if token.content.strip() else [])
        i += 1
    return _document(title, sections, "markdown")


def _inline_text(token) -> str:  # noqa: ANN001 - markdown_it.token.Token
    """An inline token as plain text: words, code and link text kept, markup and raw HTML dropped."""
    out = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif child.type == "image":
            out.append(child.content or "")
    return "".join(out)


# --- reStructuredText ------------------------------------------------------------------------------
_RST_SETTINGS = {"file_insertion_enabled": False, "raw_enabled": False, "report_level": 5, "halt_level": 5,
                 "warning_stream": io.StringIO(), "input_encoding": "unicode", "doctitle_xform": True,
                 "embed_stylesheet": False, "syntax_highlight": "none", "smart_quotes": False}


def _rst(text: str) -> Document:
    from docutils import nodes
    from docutils.core import publish_doctree
    from docutils.utils import SystemMessage

    try:
        tree = publish_doctree(text, settings_overrides=dict(_RST_SETTINGS, warning_stream=io.StringIO()))
    except (SystemMessage, ValueError, TypeError, AttributeError, IndexError, KeyError):
        return from_text(text, "rst")  # docutils gave up on it: keep its words
    title = next((c.astext() for c in tree.children if isinstance(c, nodes.title)), None)
    sections: list[tuple[str, list[str]]] = [("", [])]

    def body(node) -> None:  # noqa: ANN001 - docutils nodes
        for child in node.children:
            if isinstance(child, nodes.section):
                heading = next((c.astext() for c in child.children if isinstance(c, nodes.title)), "")
                sections.append((heading, []))
                body(child)
            elif isinstance(child, (nodes.title, nodes.system_message, nodes.comment, nodes.substitution_definition,
                                    nodes.target, nodes.raw, nodes.pending, nodes.docinfo)):
                continue
            elif isinstance(child, nodes.Element):
                sections[-1][1].extend(paragraphs(child.astext()))

    body(tree)
    return _document(title, sections, "rst")


# --- HTML ------------------------------------------------------------------------------------------
_DROPPED = {"script", "style", "noscript", "template", "svg", "math", "canvas", "iframe", "object", "embed",
            "head", "button", "select", "input", "textarea", "form"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_BLOCKS = {"p", "div", "li", "ul", "ol", "pre", "blockquote", "table", "tr", "section", "article", "main",
           "header", "footer", "aside", "nav", "figure", "figcaption", "dl", "dt", "dd", "br", "hr", "address",
           "details", "summary", "caption", "body", "html"}


def _html(text: str) -> Document:
    from bs4 import BeautifulSoup, Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

    soup = BeautifulSoup(text, "html.parser")
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag is not None else None
    sections: list[tuple[str, list[str]]] = [("", [])]
    current: list[str] = []
    first_heading: str | None = None

    def flush() -> None:
        if current:
            sections[-1][1].extend(paragraphs("".join(current)))
            current.clear()

    stack = [(soup, False)]  # (node, closing): an explicit stack, so deep nesting cannot overflow
    while stack:
        node, closing = stack.pop()
        if closing:
            flush()
            continue
        if isinstance(node, (Comment, Doctype, Declaration, ProcessingInstruction)):
            continue
        if isinstance(node, NavigableString):
            current.append(str(node))
            continue
        if not isinstance(node, Tag) or node.name in _DROPPED:
            continue
        if node.name in _HEADINGS:
            flush()
            heading = " ".join(node.get_text(" ", strip=True).split())
            first_heading = first_heading or heading
            sections.append((heading, []))
            continue
        if node.name == "pre":
            flush()
            sections[-1][1].append(node.get_text().strip("\n"))
            continue
        if node.name in _BLOCKS:
            flush()
            stack.append((node, True))
        elif node.name in ("td", "th"):
            current.append(" ")
        stack.extend((child, False) for child in reversed(list(node.children)))
    flush()
    return _document(title or first_heading, sections, "html")


# --- PDF -------------------------------------------------------------------------------------------
def _pdf(data: bytes) -> Document | Skip:
    import logging

    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError, PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a broken file's warnings are its skip reason
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):  # an empty user password is common: try it
            return Skip("encrypted PDF (needs a password)")
        pages = [page.extract_text() or "" for page in reader.pages]
        meta_title = (reader.metadata.title if reader.metadata else None) or None
    except FileNotDecryptedError:
        return Skip("encrypted PDF (needs a password)")
    except (PdfReadError, PyPdfError, ValueError, TypeError, KeyError, IndexError, AttributeError, OSError,
            RecursionError, NotImplementedError) as exc:
        return Skip(f"unreadable PDF ({type(exc).__name__})")
    sections = [("", paragraphs(page.replace("\x00", ""))) for page in pages]
    if not any(body for _, body in sections):
        return Skip("PDF without a text layer (scanned images?)")
    title = str(meta_title).strip() if meta_title and str(meta_title).strip() else None
    return _document(title, sections, "pdf")


def _text(text: str) -> Document:
    return from_text(text, "text")


def _document(title: str | None, sections: list[tuple[str, list[str]]], fmt: str) -> Document:
    kept = tuple(Section(heading, tuple(body)) for heading, body in sections if heading or body)
    return Document(title.strip() if title and title.strip() else None, kept, fmt)


_READERS: dict[str, Callable[[str], Document]] = {"markdown": _markdown, "rst": _rst, "html": _html, "text": _text}
