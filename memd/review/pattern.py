"""Regular expressions that find a seq inside any seq value, for git's own
search (``git log -G`` and ``--grep`` take POSIX extended expressions).

A seq value is ``12``, a range ``41-43`` or parts joined by ``+``. A tracked
seq run ``lo..hi`` is inside a value when one of its parts overlaps the run:
a part that starts within the run (``lo..hi`` alone or as a range start), or a
range that starts below ``lo`` and ends at ``lo`` or later. Numbers are
matched by digit patterns (seqs never have leading zeros), so the whole test
runs inside git and only real hits reach Python.
"""

from __future__ import annotations

from collections.abc import Iterable

from memd.core.signature import SeqSet

_NUMBER = "[1-9][0-9]*"
_PART = f"{_NUMBER}(-{_NUMBER})?"


def number_range(lo: int, hi: int | None) -> str:
    """An ERE matching exactly the integers ``lo..hi`` (``hi`` None: no upper
    bound), written without leading zeros. ``lo`` must be at least 1."""
    if lo < 1 or (hi is not None and hi < lo):
        raise ValueError(f"empty or invalid range {lo}..{hi}")
    alternatives: list[str] = []
    top = len(str(hi)) if hi is not None else len(str(lo))
    for digits in range(len(str(lo)), top + 1):
        a = max(lo, 10 ** (digits - 1))
        b = min(hi, 10**digits - 1) if hi is not None else 10**digits - 1
        alternatives += _same_length(str(a), str(b))
    if hi is None:
        alternatives.append(f"[1-9][0-9]{{{top},}}")  # every longer number
    return "(" + "|".join(alternatives) + ")"


def _same_length(a: str, b: str) -> list[str]:
    """Patterns for the numbers a..b, both written with the same digit count."""
    if a == b:
        return [a]
    common = 0
    while a[common] == b[common]:
        common += 1
    prefix, a, b = a[:common], a[common:], b[common:]
    rest = len(a) - 1
    if rest == 0:
        return [prefix + _digit_class(a, b)]
    low_full = a[1:] == "0" * rest
    high_full = b[1:] == "9" * rest
    out: list[str] = []
    first, last = int(a[0]), int(b[0])
    if not low_full:
        out += [prefix + a[0] + p for p in _same_length(a[1:], "9" * rest)]
        first += 1
    upper: list[str] = []
    if not high_full:
        upper = [prefix + b[0] + p for p in _same_length("0" * rest, b[1:])]
        last -= 1
    if first <= last:
        out.append(prefix + _digit_class(str(first), str(last)) + "[0-9]" * rest)
    return out + upper


def _digit_class(a: str, b: str) -> str:
    return a if a == b else f"[{a}-{b}]"


def seq_value(seqs: SeqSet | Iterable[int]) -> str:
    """An ERE matching a whole seq value that holds any of ``seqs``; anchor it
    with what surrounds a value (``<seq=`` and ``[,>]`` in a signature)."""
    runs = _runs(seqs)
    hits = []
    for lo, hi in runs:
        inside = number_range(lo, hi)
        hits.append(f"{inside}(-{_NUMBER})?")
        if lo > 1:
            hits.append(f"{number_range(1, lo - 1)}-{number_range(lo, None)}")
    return f"({_PART}[+])*({'|'.join(hits)})([+]{_PART})*"


def _runs(seqs: SeqSet | Iterable[int]) -> tuple[tuple[int, int], ...]:
    from memd.review.spans import runs

    return runs(seqs) if isinstance(seqs, SeqSet) else SeqSet.of(seqs).parts


def signature_pattern(seqs: SeqSet | Iterable[int]) -> str:
    """Lines holding a signature whose seq value holds any of ``seqs``."""
    return f"<seq={seq_value(seqs)}[,>]"


def superseded_pattern(seqs: SeqSet | Iterable[int]) -> str:
    """Consolidation message lines ``seq 44 supersedes seq 12: ...`` naming
    any of ``seqs`` as the superseded one."""
    return f"supersedes seq {seq_value(seqs)}([: ]|$)"


def trailer_pattern(seqs: SeqSet | Iterable[int]) -> str:
    """The ``Memd-Seq:`` trailer of a consolidation that took in any of ``seqs``."""
    return f"^Memd-Seq: {seq_value(seqs)}$"
