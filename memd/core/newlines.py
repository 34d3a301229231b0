"""Line endings: which one a file uses, and its lines whichever each has.

Its own module because ``memd add`` needs the first without the Markdown
parser (a plain add imports only what appending needs).
"""

from __future__ import annotations


def newline_of(text: str) -> str:
    """The line ending most of ``text``'s lines have (what memd writes there)."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and 2 * crlf >= text.count("\n") else "\n"


def split_lines(text: str) -> list[str]:
    """``text``'s lines, whichever ending each has. One Windows line in a file of
    Unix ones (or the other way round) is a line like the others: split on the
    ending of the file's first CRLF, the rest of the file was one long line."""
    crlf, lf = text.count("\r\n"), text.count("\n")
    if crlf == lf:
        return text.split("\r\n") if crlf else text.split("\n")
    if not crlf:
        return text.split("\n")
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
