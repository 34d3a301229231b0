"""One list item of a memory file: its signature, text, continuation lines,
and the link to its ``src`` that memd writes after the text.

Kept apart from the document model (document.py) so that appending an entry
(``memd add``, once per message from hooks) builds one without loading what
parses and rewrites whole files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cached_property

from memd.core.signature import Signature


@dataclass(frozen=True)
class Entry:
    """A list item at column 0; signed when its text starts with ``<seq=``.

    ``link``: where the ``src`` link after the text points from (``""`` from
    the vault's root, ``"../"`` from ``topics/``), None when it has none. The
    link is part of the line, not of the text: it is written from the
    signature's ``src`` (``source_link``), so it always says what ``src`` says."""

    text: str
    signature: Signature | None = None
    continuation: tuple[str, ...] = ()
    marker: str = "-"
    pad: str = " "
    sep: str = " "
    link: str | None = None

    @cached_property
    def head(self) -> str:
        """The item's first line as written. Kept once made: a long import's buffer,
        less what each round filed, is written again at every round."""
        signature = "" if self.signature is None else self.signature.render()
        tail = ""
        if self.link is not None and self.signature is not None:
            tail = source_link(self.signature.src, self.link) or ""
        return f"{self.marker}{self.pad}{signature}{self.sep}{self.text}{tail}"

    def lines(self) -> tuple[str, ...]:
        return (self.head, *self.continuation)

    @cached_property
    def full_text(self) -> str:
        """Entry text with continuation lines joined by newlines (indent removed).
        Kept once made: an entry parsed once is read at every version of a file that holds it."""
        return "\n".join([self.text, *(line.strip() for line in self.continuation)]).strip()


# Where an entry starts in a file's text: the line break before a list item signed at column 0.
# A file cut there falls into pieces of one entry each (with any lines that follow it), the
# unit memd reads once and remembers (core/redact.py's clean entries, verify's pieces of files).
ENTRY_START = re.compile(r"\n(?=[-*+] <seq=)")

LINK_LABEL = "source"
# What a link's target may hold as written; anything else is percent-encoded,
# so the link is one CommonMark link destination (no space, no parenthesis).
_LINK_SAFE = "/#^.-_~:%"
_AS_WRITTEN = re.compile(r"[A-Za-z0-9/#^.\-_~:%]*")  # what quote leaves as it is, with _LINK_SAFE


def source_link(src: str | None, base: str) -> str | None:
    """The Markdown link written after an entry's text for its ``src``
    (`` [source](../sources/chat.md#^t12)``): a file under ``sources/`` from
    the folder ``base`` leads out of, or a web address. None for any other
    ``src`` (an id such as ``D1:3`` is no place a link could open)."""
    if not src:
        return None
    if src.startswith("sources/"):
        if ".." in src.split("#", 1)[0].split("/"):
            return None
        if _AS_WRITTEN.fullmatch(src):  # as most are written (``sources/2026/12/chat.md#^t12``): nothing to quote
            return f" [{LINK_LABEL}]({base}{src})"
        target = base + _quote(src, _LINK_SAFE)
    elif src.startswith(("https://", "http://")):
        target = _quote(src, _LINK_SAFE + "?&=+@!$*,;")
    else:
        return None
    return f" [{LINK_LABEL}]({target})"


def _quote(text: str, safe: str) -> str:
    from urllib.parse import quote  # imported only for a link that needs it

    return quote(text, safe=safe)


_LINK_OPENS = f" [{LINK_LABEL}]("


def split_link(text: str, signature: Signature) -> tuple[str, str | None]:
    """``text`` without the ``src`` link memd wrote after it, and that link's
    base; a link that is not exactly what memd writes for this ``src`` stays
    part of the text (a person may have written it)."""
    if not text.endswith(")"):
        return text, None
    at = text.rfind(_LINK_OPENS)
    if at <= 0:
        return text, None
    # The base is the link's own "../" prefix: one link to build and compare, not one per depth.
    target = text[at + len(_LINK_OPENS) : -1]
    depth = 0
    while depth < 4 and target.startswith("../", 3 * depth):
        depth += 1
    if depth > 3:
        return text, None
    base = "../" * depth
    link = source_link(signature.src, base)
    if link is not None and text.endswith(link) and len(text) > len(link):
        return text[: -len(link)], base
    return text, None


def with_link(entry: Entry, base: str) -> Entry:
    """``entry`` with the link to its ``src`` as seen from ``base``, where it can have one."""
    if entry.signature is None or entry.link == base or source_link(entry.signature.src, base) is None:
        return entry
    return replace(entry, link=base)


def make_entry(signature: Signature, text: str, link: str | None = None) -> Entry:
    """An entry as memd writes it; extra lines become indented continuation.
    ``link``: the base of its ``src`` link (see ``Entry``), None for none."""
    first, *rest = text.strip().splitlines() or [""]
    entry = Entry(first.strip(), signature, tuple("  " + line.strip() for line in rest if line.strip()))
    return entry if link is None else with_link(entry, link)
