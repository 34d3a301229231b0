"""Entry signatures: ``<seq=12+41-43,time=...,source=user,src=...,key=value>``.

How a signature and its values are written: ``memd.core.signature_text``.

Seq values are bounded so that no text can make memd do unbounded work: a
seq has at most 15 digits and one entry names at most ``MAX_SEQS_PER_ENTRY``
seqs (a merged entry holds the duplicates of one statement; a range like
``1-999999999999`` is a typo). Parsing never expands a range.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

from memd.core.errors import FormatError
from memd.core.signature_text import decode_value, written

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]*$")
_SEQ_PART = re.compile(r"^([1-9][0-9]*)(?:-([1-9][0-9]*))?$")
MAX_SEQ = 10**15 - 1
_SEQ_DIGITS = len(str(MAX_SEQ))
MAX_SEQS_PER_ENTRY = 100_000
# Meta keys whose value names seqs (``supersedes=12+40-41``): bounded like the
# entry's own seq, so a typo such as ``1-999999999999`` is refused, never expanded.
SEQ_KEYS = frozenset({"supersedes"})
# Keys every signature holds, valid by ``_KEY`` (checked without matching it).
_KNOWN_KEYS = frozenset({"seq", "time", "source", "src"})
# A signature ends at the first ">" (values never contain a raw ">").
SIGNATURE_AT_START = re.compile(r"^<seq=[^>\n]*>")


@dataclass(frozen=True, order=True)
class SeqSet:
    """A seq value: ``12``, ``41-43`` or ``12+41-43``, in the order written."""

    parts: tuple[tuple[int, int], ...]

    @classmethod
    def parse(cls, text: str, limit: int | None = None) -> SeqSet:
        """Parse without expanding; ``limit`` caps how many seqs it may name.
        Text a person can type (an entry's signature, a command's argument)
        is parsed with ``MAX_SEQS_PER_ENTRY``; memd's own records (a commit's
        trailers, verify's checkpoint) name as many as they need."""
        if (
            text.isdigit()
            and text.isascii()
            and text[0] != "0"
            and len(text) <= _SEQ_DIGITS
            and (limit is None or limit > 0)
        ):
            return cls((((seq := int(text)), seq),))  # one seq, as nearly every entry names: the rules below agree
        shown = text if len(text) <= 60 else text[:57] + "..."
        parts: list[tuple[int, int]] = []
        total = 0
        for piece in text.split("+"):
            match = _SEQ_PART.match(piece)
            if not match:
                raise FormatError(f"invalid seq {shown!r} (expected e.g. 12, 41-43 or 12+41-43)")
            if any(len(group) > len(str(MAX_SEQ)) for group in match.groups() if group):
                raise FormatError(f"seq {shown!r} is too large (a seq has at most {len(str(MAX_SEQ))} digits)")
            start = int(match.group(1))
            end = int(match.group(2)) if match.group(2) else start
            if match.group(2) and end <= start:
                raise FormatError(f"invalid seq range {piece!r} in {shown!r} (end must exceed start)")
            total += end - start + 1
            if limit is not None and total > limit:
                raise FormatError(f"seq {shown!r} names {_count(text)} seqs; one entry names at most {limit} (a typo?)")
            parts.append((start, end))
        ordered = sorted(parts)
        for (_, end), (start, _) in itertools.pairwise(ordered):
            if start <= end:
                raise FormatError(f"seq {shown!r} names a seq twice")
        return cls(tuple(parts))

    @classmethod
    def of(cls, seqs: Iterable[int]) -> SeqSet:
        """Compress seqs into sorted ranges: ``[3, 1, 2, 7]`` -> ``1-3+7``."""
        ordered = sorted(set(seqs))
        if not ordered or ordered[0] < 1:
            raise FormatError("a seq set needs at least one positive seq")
        parts: list[tuple[int, int]] = []
        start = prev = ordered[0]
        for seq in ordered[1:]:
            if seq != prev + 1:
                parts.append((start, prev))
                start = seq
            prev = seq
        parts.append((start, prev))
        return cls(tuple(parts))

    def __str__(self) -> str:
        return "+".join(str(a) if a == b else f"{a}-{b}" for a, b in self.parts)

    def __iter__(self) -> Iterator[int]:
        if len(self.parts) == 1:  # nearly every entry: no generator frame per read
            start, end = self.parts[0]
            return iter(range(start, end + 1))
        return itertools.chain.from_iterable(range(start, end + 1) for start, end in self.parts)

    def __len__(self) -> int:
        if len(self.parts) == 1:
            start, end = self.parts[0]
            return end - start + 1
        return sum(end - start + 1 for start, end in self.parts)

    @property
    def first(self) -> int:
        return min(start for start, _ in self.parts)

    @property
    def last(self) -> int:
        return max(end for _, end in self.parts)


def check_meta(key: str, value: str) -> None:
    """Raise ``FormatError`` when an extra signature key or value cannot be
    written as given: a signature holds no spaces (``,`` ``=`` ``>`` and line
    breaks are percent-encoded, but whitespace would make it unparseable),
    keys are words, and a seq-valued key (``SEQ_KEYS``) names at most
    ``MAX_SEQS_PER_ENTRY`` seqs. The message says the fix."""
    if not _KEY.match(key):
        raise FormatError(
            f"meta key {key[:40]!r} cannot be written in a signature: use letters, digits, _ . : - "
            "(starting with a letter), e.g. project=atlas"
        )
    if any(ch.isspace() for ch in value):
        fix = re.sub(r"[\s,]*\s[\s,]*", "-", value.strip())
        raise FormatError(
            f"meta {key}={value[:60]!r} cannot be written in a signature, which holds no spaces: "
            f"write {key}={fix[:60]} or put the words in the entry's text"
        )
    if key in SEQ_KEYS:
        try:
            SeqSet.parse(value, MAX_SEQS_PER_ENTRY)
        except FormatError as err:
            raise FormatError(f"meta {key}={value[:60]}: {err}") from None


def check_provenance(source: str | None, src: str | None) -> None:
    """Raise ``FormatError`` when who said an entry (``source``) is missing or
    either it or the reference to where it came from (``src``) holds a space,
    which a signature cannot; the message says the fix."""
    if source is not None and not source.strip():
        raise FormatError("source cannot be empty: say who said it (user, ai, hand, import:NAME)")
    for key, value in (("source", source), ("src", src)):
        if value is not None and any(ch.isspace() for ch in value):
            fix = re.sub(r"\s+", "-", value.strip())
            raise FormatError(
                f"{key} {value[:60]!r} cannot be written in a signature, which holds no spaces: write {fix[:60]}"
            )


def _count(text: str) -> int:
    """How many seqs a (possibly huge) seq text names, without expanding it."""
    total = 0
    for piece in text.split("+"):
        first, _, last = piece.partition("-")
        if first.isdigit() and (not last or last.isdigit()):
            total += int(last or first) - int(first) + 1
    return total


@dataclass(frozen=True)
class Signature:
    """An entry's metadata; ``fields`` keeps keys and decoded values in order."""

    fields: tuple[tuple[str, str], ...]

    @classmethod
    def make(
        cls,
        seq: SeqSet | int | str,
        time: str | None = None,
        source: str | None = None,
        src: str | None = None,
        extra: Iterable[tuple[str, str]] = (),
    ) -> Signature:
        seq_text = str(seq)
        SeqSet.parse(seq_text, MAX_SEQS_PER_ENTRY)
        fields = [("seq", seq_text)]
        for key, value in (("time", time), ("source", source), ("src", src)):
            if value is not None:
                fields.append((key, value))
        fields.extend(extra)
        return cls.from_fields(fields)

    @classmethod
    def from_fields(cls, fields: Iterable[tuple[str, str]]) -> Signature:
        items = tuple(fields)
        keys = [key for key, _ in items]
        if not keys or keys[0] != "seq":
            raise FormatError("a signature must start with seq=")
        for key in keys:
            if key not in _KNOWN_KEYS and not _KEY.match(key):
                raise FormatError(f"invalid signature key {key[:40]!r}")
        if len(set(keys)) != len(keys):
            duplicates = sorted({key for key in keys if keys.count(key) > 1})
            raise FormatError(f"duplicate signature key {duplicates[0]!r}")
        made = cls(items)
        made.__dict__["seq"] = SeqSet.parse(items[0][1], MAX_SEQS_PER_ENTRY)  # validated once, kept for ``seq``
        return made

    @classmethod
    def parse(cls, raw: str) -> Signature:
        """Parse ``<seq=...,...>`` exactly as written (no spaces allowed)."""
        shared = _shared  # read once: the scope may end in another thread meanwhile
        if shared is not None:
            made = shared.get(raw)
            if made is None:
                made = shared[raw] = cls._parse(raw)
            return made
        return cls._parse(raw)

    @classmethod
    def _parse(cls, raw: str) -> Signature:
        if not (raw.startswith("<") and raw.endswith(">")) or ">" in raw[1:-1]:
            raise FormatError(f"not a signature: {raw!r}")
        fields = []
        for item in raw[1:-1].split(","):
            key, eq, value = item.partition("=")
            if not eq:
                raise FormatError(f"signature item {item!r} has no '='")
            fields.append((key, decode_value(value) if "%" in value else value))
        return cls.from_fields(fields)

    def render(self) -> str:
        return self._rendered

    @cached_property
    def _rendered(self) -> str:
        # Cached: a document renders each of its entries' signatures on every write.
        return written(self.fields)

    def get(self, key: str) -> str | None:
        for k, v in self.fields:
            if k == key:
                return v
        return None

    @cached_property
    def seq(self) -> SeqSet:
        return SeqSet.parse(self.fields[0][1], MAX_SEQS_PER_ENTRY)

    @property
    def time(self) -> str | None:
        return self.get("time")

    @property
    def source(self) -> str | None:
        return self.get("source")

    @property
    def src(self) -> str | None:
        return self.get("src")

    @property
    def extra(self) -> tuple[tuple[str, str], ...]:
        return tuple((k, v) for k, v in self.fields if k not in {"seq", "time", "source", "src"})

    def replace(self, **changes: str | None) -> Signature:
        """A copy with some keys set (``None`` removes a key); order is kept."""
        fields = [(k, changes.pop(k) if k in changes else v) for k, v in self.fields]
        fields.extend(changes.items())
        return Signature.from_fields((k, v) for k, v in fields if v is not None)


# Signatures parsed within ``shared_signatures``, by how they are written.
_shared: dict[str, Signature] | None = None


@contextmanager
def shared_signatures() -> Iterator[None]:
    """Within it, a signature written the same way is parsed once. A walk through
    history meets each entry's signature in the buffer, in its topic and in the
    versions after (168,000 parses of 40,000 signatures in a 40,000-entry
    import); a signature is immutable, so the entries may share it. Scoped, so a
    long-lived process keeps none of them."""
    global _shared
    if _shared is not None:  # nested: the outer scope keeps them
        yield
        return
    _shared = {}
    try:
        yield
    finally:
        _shared = None
