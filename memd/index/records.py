"""What the index holds: records cut from vault files, line by line.

Each file gives one record per signed or hand-written entry, and each topic or
source file also gives one record per heading partition (the lines from one
heading to the next). Records carry their 1-based line range so every hit can
be cited as ``path:line``, and their neighbours (the entry before and after in
the same file) so retrieval can widen a hit to the turn around it.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.core.layout import doc_id as doc_id_for
from memd.index.citations import covered_lines

if TYPE_CHECKING:
    # Parsing is the index build's, imported there: a search reads records, never a file.
    from memd.core.document import Document, LocatedEntry
    from memd.core.signature import SeqSet

# A heading partition with more lines than this is cut into chunks, so one
# huge untitled source file cannot become one giant record.
PARTITION_LINES = 40
# Expanding a merged seq like 1-100000 into the seq field would bloat the index.
MAX_SEQS = 500


# Slots: a long-lived reader keeps up to hundreds of thousands of decoded records,
# and without a dict of its own each takes half the memory (1.2 against 2.5 KB).
@dataclass(frozen=True, slots=True)
class Record:
    rid: str
    kind: str  # "entry" | "partition"
    doc: str
    path: str
    headings: tuple[str, ...]
    line: int
    end_line: int
    text: str
    seq: str | None = None
    seqs: tuple[int, ...] = ()
    time: str | None = None
    source: str | None = None
    src: str | None = None
    extra: tuple[tuple[str, str], ...] = ()
    prev: str | None = None
    next: str | None = None
    block: str | None = None  # for an entry: the rid of the partition holding it

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.rid,
            "cite": self.cite,
            "kind": self.kind,
            "doc": self.doc,
            "path": self.path,
            "line": self.line,
            "end_line": self.end_line,
            "headings": list(self.headings),
            "seq": self.seq,
            "time": self.time,
            "source": self.source,
            "src": self.src,
            "meta": dict(self.extra),
            "text": self.text,
        }

    @property
    def cite(self) -> str:
        return f"{self.path}:{self.line}" if self.line == self.end_line else f"{self.path}:{self.line}-{self.end_line}"


def when_spans(record: Record) -> list[Any]:
    """The days named by the record's ``when=`` signature key (relative times resolved at writing)."""
    from memd.core.timeexpr import parse_when

    return [span for key, value in record.extra if key == "when" for span in parse_when(value)]


def content_hash(data: bytes) -> str:
    import hashlib  # only a build hashes what it reads

    return hashlib.sha1(data).hexdigest()


def indexed_records(root: Path, rel: str, held: frozenset[str] = frozenset()) -> tuple[str, list[Record]]:
    """What the index holds of a vault file: its digest and records, secrets
    redacted; ``held``: a source copy's anchors that entries name, left out of
    its records (``memd.index.citations``)."""
    from memd.core.atomic import decode_markdown
    from memd.core.errors import DocumentError
    from memd.core.redact import redact

    data = (root / rel).read_bytes()
    # What is left out of a copy's records is part of what they were made from.
    digest = content_hash(data + "\0".join(["", *sorted(held)]).encode("utf-8"))
    try:
        text = decode_markdown(data, rel)
    except DocumentError:
        if b"\x00" in data:
            return digest, []  # binary: `memd lint` reports it; nothing to index
        # A stray byte that is no UTF-8 (`memd lint` and `memd status` name it) does not hide
        # the rest of the file from search: it reads as U+FFFD, every line where it was.
        text = data.decode("utf-8", "replace")
    # A secret typed by hand is not copied into the index (lines keep their numbers).
    return digest, records_for(rel, redact(text, keep_lines=True).text, held)


def records_for(rel: str, text: str, held: frozenset[str] = frozenset()) -> list[Record]:
    """All records of one file (``rel`` is its vault-relative posix path).

    ``held``: for a source copy, the anchors (``^t12``, ``L9``) that entries
    name in their ``src``. Those turns and paragraphs are found through the
    entries made from them, so the copy gives records only for the rest:
    each text is indexed once (``memd.index.citations``)."""
    from memd.core.document import parse_document

    document = parse_document(text)
    doc = doc_id_for(rel)
    located = list(document.entries())
    covered = covered_lines(text, located, held) if held else set()
    entries = [_entry_record(rel, doc, item) for item in located if item.line not in covered]
    linked = []
    for i, record in enumerate(entries):
        prev = entries[i - 1].rid if i > 0 else None
        nxt = entries[i + 1].rid if i + 1 < len(entries) else None
        linked.append(_with_links(record, prev, nxt))
    if rel == "CURRENT.md":
        return linked
    partitions = _partitions(rel, doc, document, entries, covered)
    owner: dict[int, str] = {}
    for part in partitions:
        for line in range(part.line, part.end_line + 1):
            owner.setdefault(line, part.rid)
    return [replace(r, block=owner.get(r.line)) for r in linked] + partitions


def _with_links(record: Record, prev: str | None, nxt: str | None) -> Record:
    return replace(record, prev=prev, next=nxt)


def _entry_record(rel: str, doc: str, located: LocatedEntry) -> Record:
    signature = located.entry.signature
    seq = str(signature.seq) if signature else None
    return Record(
        rid=f"{rel}#L{located.line}",
        kind="entry",
        doc=doc,
        path=rel,
        headings=located.headings,
        line=located.line,
        end_line=located.end_line,
        text=located.entry.full_text,
        seq=seq,
        seqs=_expand(signature.seq) if signature else (),
        time=signature.time if signature else None,
        source=signature.source if signature else "hand",
        src=signature.src if signature else None,
        extra=signature.extra if signature else (),
    )


def _expand(seqs: SeqSet) -> tuple[int, ...]:
    out: list[int] = []
    for seq in seqs:
        out.append(seq)
        if len(out) >= MAX_SEQS:
            break
    return tuple(out)


def _partitions(
    rel: str, doc: str, document: Document, entries: list[Record], covered: AbstractSet[int] = frozenset()
) -> list[Record]:
    from memd.core.document import Heading
    from memd.core.entry import Entry

    by_line = {record.line: record for record in entries}
    parts: list[tuple[int, tuple[str, ...], list[tuple[int, str]]]] = []
    path: list[tuple[int, str]] = []
    current: list[tuple[int, str]] = []
    start = document.body_start
    for line, block in document.located():
        if isinstance(block, Heading):
            if current:
                parts.append((start, tuple(t for _, t in path), current))
            path = [(lvl, t) for lvl, t in path if lvl < block.level]
            path.append((block.level, block.title))
            start, current = line, []
            continue
        if line in covered:
            continue
        if isinstance(block, Entry):
            current.append((line, by_line[line].text if line in by_line else block.full_text))
        else:
            stripped = block.lines()[0].strip()
            if stripped:
                current.append((line, stripped))
    if current:
        parts.append((start, tuple(t for _, t in path), current))
    records: list[Record] = []
    for start, headings, lines in parts:
        for chunk_start, chunk in _chunks(start, lines):
            records.append(_partition_record(rel, doc, headings, chunk_start, chunk, by_line))
        # A section holding signed entries is found through them (``retrieve``), so what a
        # person wrote there besides them ("Priya's deputy is Okonkwo.") is a record of its
        # own: each run of such lines between entries, so no record's lines hold an entry's.
        if not any(line in by_line and by_line[line].seqs for line, _ in lines):
            continue  # a section of prose and unsigned items is a result itself
        for is_entry, group in groupby(lines, key=lambda numbered: numbered[0] in by_line):
            if not is_entry:
                run = list(group)
                for chunk_start, chunk in _chunks(run[0][0], run):
                    records.append(_partition_record(rel, doc, headings, chunk_start, chunk, {}, "R"))
    return records


def _chunks(start: int, lines: list[tuple[int, str]]) -> list[tuple[int, list[tuple[int, str]]]]:
    chunks: list[tuple[int, list[tuple[int, str]]]] = []
    for i in range(0, len(lines), PARTITION_LINES):
        piece = lines[i : i + PARTITION_LINES]
        chunks.append((start if i == 0 else piece[0][0], piece))
    return chunks


def _partition_record(
    rel: str,
    doc: str,
    headings: tuple[str, ...],
    start: int,
    lines: list[tuple[int, str]],
    by_line: dict[int, Record],
    mark: str = "P",  # "R": the prose lines of a section that holds entries too
) -> Record:
    members = [by_line[line] for line, _ in lines if line in by_line]
    seqs: list[int] = []
    for member in members:
        seqs.extend(member.seqs)
    times = sorted(m.time for m in members if m.time)
    srcs = [m.src for m in members if m.src]
    last = lines[-1][0]
    if last in by_line:
        last = by_line[last].end_line
    return Record(
        rid=f"{rel}#{mark}{start}",
        kind="partition",
        doc=doc,
        path=rel,
        headings=headings,
        line=start,
        end_line=last,
        text="\n".join(text for _, text in lines),
        # Its entries' seqs, each as its signature writes it ("5+7" is one folded entry): a list.
        seq=", ".join(m.seq for m in members if m.seq) or None,
        seqs=tuple(seqs[:MAX_SEQS]),
        time=times[-1] if times else None,
        source=None,
        src=";".join(srcs) or None,
    )
