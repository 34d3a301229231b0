"""A region of a file that both sides of a document merge changed: settled
when the lines in it allow, else described for the person who must decide.

The three-way diff runs over tokens that are whole entries and lines. By the
time it runs, where each seq lives was decided for all files at once
(``merge.py``, step 1), so entries in a changed region are never a conflict
by themselves: only lines changed differently on both sides are. Kept apart
from the merge so this rule, and the wording a person reads, sit in one place.
"""

from __future__ import annotations

from memd.sync.diff3 import Hunk
from memd.sync.sides import Token


def resolve_hunk(hunk: Hunk[Token]) -> list[Token] | None:
    """Both sides changed one region. Entries are never a conflict by
    themselves (where each seq lives was decided already): what matters is
    whether the lines around them changed on both sides."""
    lines = [[t for t in part if t[0] == "L"] for part in (hunk.base, hunk.ours, hunk.theirs)]
    base, mine, theirs = lines
    if mine == base:
        frame, extra = list(hunk.theirs), [t for t in hunk.ours if t[0] == "E" and t not in hunk.theirs]
    elif theirs in (base, mine):
        frame, extra = list(hunk.ours), [t for t in hunk.theirs if t[0] == "E" and t not in hunk.ours]
    elif not any(text.strip() for _, text in base):
        # Both inserted lines at the same place (two new sections, say): keep both, the remote's first.
        return list(hunk.theirs) + [t for t in hunk.ours if t not in hunk.theirs]
    else:
        return None
    last = max((i for i, t in enumerate(frame) if t[0] == "E"), default=len(frame) - 1)
    return frame[: last + 1] + extra + frame[last + 1 :]


def describe_hunk(hunk: Hunk[Token]) -> str:
    def text(part: tuple[Token, ...]) -> str:
        shown = " / ".join(value.split("\n")[0] for kind, value in part if kind == "L" and value.strip())
        return shown or "(removed)"

    here, there = difference(text(hunk.ours), text(hunk.theirs))
    return f"changed differently here ({here!r}) and on the remote ({there!r})"


def difference(here: str, there: str, width: int = 60) -> tuple[str, str]:
    """Both versions as one line each, cut to the same window of ``width``
    characters around the first one in which they differ: two long versions
    alike in their first ``width`` characters would otherwise read the same."""
    here, there = " ".join(here.split()), " ".join(there.split())
    if len(here) <= width and len(there) <= width:
        return here, there
    first = next((i for i, (a, b) in enumerate(zip(here, there, strict=False)) if a != b), min(len(here), len(there)))
    start = max(0, first - width // 3)

    def window(text: str) -> str:
        if start == 0:
            return clip(text, width)
        piece = "…" + text[start + 1 : start + width]
        return piece if start + width >= len(text) else piece[:-1] + "…"

    return window(here), window(there)


def clip(text: str, width: int = 60) -> str:
    """One line of at most ``width`` characters, so a conflict message stays one line."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
