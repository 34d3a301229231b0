"""A topic's summary when entries leave the topic.

A summary is a few of the topic's entries' sentences, joined by " · " (a long
one cut with an ellipsis). When an entry leaves the file (forgotten, or moved
to another topic by a sync's merge) the sentences quoting it go too, so the
topic no longer shows words it does not hold; the other sentences stay.
"""

from __future__ import annotations

from collections.abc import Iterable

from memd.core.document import Frontmatter
from memd.core.errors import MemdError

SEPARATOR = " · "


def without_quotes(frontmatter: Frontmatter | None, gone: Iterable[str]) -> Frontmatter | None:
    """``frontmatter`` without the summary's sentences that quote one of the texts ``gone``."""
    if frontmatter is None:
        return None
    said = [" ".join(text.split()) for text in gone]
    if not said:
        return frontmatter
    try:
        data = dict(frontmatter.data)
    except MemdError:
        return frontmatter  # a frontmatter a person broke is theirs to mend (lint names it)
    summary = data.get("summary")
    if not isinstance(summary, str):
        return frontmatter
    pieces = summary.split(SEPARATOR)
    kept = [piece for piece in pieces if not any(_quotes(piece, text) for text in said)]
    if kept == pieces:
        return frontmatter
    data["summary"] = SEPARATOR.join(kept)
    return Frontmatter.from_data(data)


def pieces(summary: str) -> list[str]:
    """A summary's sentences, each with its spaces made single."""
    return [" ".join(piece.split()) for piece in summary.split(SEPARATOR) if piece.strip()]


def written_by_memd(summary: str, wrote: str | None, texts: Iterable[str]) -> bool:
    """Whether ``summary`` (a topic's, as read) is memd's to write again: empty, the
    one memd last wrote there (``wrote``; None when unknown) with sentences taken
    out, or sentences quoting the topic's entries (``texts``), as memd's own
    offline summaries are. Anything else a person wrote, and it stays."""
    said = pieces(summary)
    if not said:
        return True
    if wrote is not None and set(said) <= set(pieces(wrote)):
        return True
    joined = "\n".join(" ".join(text.split()) for text in texts)
    return all(_quotes(piece.split(": ", 1)[-1], joined) for piece in said)


def _quotes(piece: str, text: str) -> bool:
    core = piece.strip().removesuffix("…").strip()  # a long sentence is cut, with an ellipsis
    return len(core) >= 3 and core in text
