"""One side of a document merge: its documents cut into tokens, and where each seq lives.

``merge.py`` reads three sides (the merge base, here, the remote) and
compares them. An entry becomes one token named by its seqs, so the
three-way diff lines it up with itself on the other side even when its words
changed; everything else stays lines. A side is read across all its files at
once because consolidation moves entries between files: the merge must find
a seq wherever a side put it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from memd.core.document import Document, parse_document
from memd.core.entry import Entry
from memd.core.signature import SeqSet

Place = tuple[str, str]  # (path, entry key)
Token = tuple[str, str]  # ("E", key) or ("L", the block's lines)


def key_of(entry: Entry) -> str:
    assert entry.signature is not None
    return str(SeqSet.of(entry.signature.seq))


def same_entry(a: Entry | None, b: Entry | None) -> bool:
    """Equal as memory (signature and words), whatever the indentation."""
    if a is None or b is None:
        return a is b
    assert a.signature is not None and b.signature is not None
    return a.signature.render() == b.signature.render() and a.full_text == b.full_text


@dataclass
class Side:
    """One side's documents, cut into tokens, with where each seq lives."""

    docs: dict[str, Document] = field(default_factory=dict)
    tokens: dict[str, list[Token]] = field(default_factory=dict)
    lines: dict[str, list[int]] = field(default_factory=dict)  # first line of each token
    entries: dict[Place, Entry] = field(default_factory=dict)
    by_key: dict[str, Place] = field(default_factory=dict)
    place: dict[int, Place] = field(default_factory=dict)

    @classmethod
    def read(cls, texts: Mapping[str, str]) -> Side:
        side = cls()
        for path in sorted(texts):
            document = parse_document(texts[path])
            side.docs[path] = document
            tokens, starts = [], []
            for line, block in document.located():
                starts.append(line)
                if isinstance(block, Entry) and block.signature is not None:
                    seqs = set(block.signature.seq)
                    if not seqs & side.place.keys():
                        key = key_of(block)
                        tokens.append(("E", key))
                        side.entries[(path, key)] = block
                        side.by_key.setdefault(key, (path, key))
                        side.place.update({seq: (path, key) for seq in seqs})
                        continue
                # Anything else, and a second entry naming a seq already seen, is kept as lines.
                tokens.append(("L", "\n".join(block.lines())))
            side.tokens[path] = tokens
            side.lines[path] = starts
        return side

    def entry(self, key: str) -> Entry | None:
        place = self.by_key.get(key)
        return self.entries.get(place) if place else None
