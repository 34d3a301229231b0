"""Vault files as they were at past commits: the last versions of one file, the
files a commit changed, and ``ParsedBlobs``, which parses each blob a walk of
the history meets once.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from memd.core.errors import FormatError
from memd.git.command import run_git

if TYPE_CHECKING:
    # Only a type here: git sits below the vault, which passes itself in.
    from memd.core.document import Document, Known
    from memd.core.entry import Entry
    from memd.vault.vault import Vault

T = TypeVar("T")


def versions_of(vault: Vault, rel: str, limit: int) -> list[Document]:
    """The last ``limit`` committed versions of the vault file ``rel``, newest first (HEAD's first)."""
    from memd.core.document import parse_document
    from memd.git.command import cat_file, decode

    shas = run_git(vault, "log", f"-n{limit}", "--format=%H", "--", rel).stdout.split()
    found = []
    for obj in cat_file(vault.root, [f"{sha}:./{rel}" for sha in shas]):
        if obj is None or obj.kind != "blob":
            break  # the file did not exist before (or was renamed): no older version to compare with
        try:
            found.append(parse_document(decode(obj.data)))
        except FormatError:
            break
    return found


def as_consolidated(vault: Vault, rel: str, key: str) -> Document | None:
    """The vault file ``rel`` as the last consolidation commit that changed its
    frontmatter's ``key`` left it, on any clone (None: none did, or it cannot be read)."""
    from memd.core.document import parse_document
    from memd.git.command import cat_file, decode

    changed = f"-G^{key}:"  # commits whose diff adds or removes a line of that key
    args = ("log", "-n1", "--follow", "--grep=^Memd-Consolidation:", changed, "--format=%H", "--", rel)
    shas = run_git(vault, *args).stdout.split()
    for obj in cat_file(vault.root, [f"{sha}:./{rel}" for sha in shas]):
        if obj is not None and obj.kind == "blob":
            try:
                return parse_document(decode(obj.data))
            except FormatError:
                return None
    return None


class _Aging(dict[tuple[str, tuple[str, ...]], tuple["Entry | None", "str | None"]]):
    """Known items, and the generation before them: an item found there moves up."""

    def __init__(self, older: Known) -> None:
        super().__init__()
        if isinstance(older, _Aging):
            older.older = {}  # one generation back only: more would keep every item a walk ever read
        self.older: Known = older

    def get(self, key: tuple[str, tuple[str, ...]], default: Any = None) -> Any:
        found = super().get(key)
        if found is None:
            found = self.older.pop(key, None)
            if found is not None:
                self[key] = found
        return default if found is None else found


class ParsedBlobs(Generic[T]):
    """What ``derive`` makes of the document in each git blob, keyed by the
    blob's id (git's hash of its bytes): a file that stays the same across
    the commits of a walk is parsed once. The least recently used go first
    once their estimated sizes (``size``, by default the blob's length) pass
    ``budget`` bytes; the items parsed (shared by the versions of a file) are
    let go together once they would take about as much again."""

    ITEM_BYTES = 1536  # an item's lines, entry and signature in memory (1.4 KB measured for 90-byte lines)
    # The items may take this many times the budget: the entries of a vault's buffer and
    # topics at once (80,000 items for a 40,000-turn import, a generation holds 87,000).
    # Cleared sooner, they are parsed again at every version of the buffer, which repeats all
    # but the entries a round filed; at 4, a 40,000-turn import's walk parsed 48,000 twice.
    KNOWN_SHARE = 8

    def __init__(
        self,
        derive: Callable[[Document], T],
        budget: int = 32 << 20,
        size: Callable[[T], int] | None = None,
        known: Known | None = None,
    ) -> None:
        self.derive = derive
        self.budget = budget
        self.size = size
        self.held = 0  # estimated bytes of the values held
        self.parsed = 0  # blobs parsed (a hit parses nothing)
        self._values: OrderedDict[bytes, tuple[T | None, int]] = OrderedDict()
        # Items parsed in any blob: a new version of a file repeats most of the last one's.
        self._known: Known = {} if known is None else known  # (``known``: items parsed before, shared)

    def items(self) -> Known:
        """The items parsed so far (``parse_document``'s ``known``), for this cache's parses and
        a parse of the same entries elsewhere: past their share of the budget, a new generation
        begins, the last one kept behind it (the items read again move up, the rest go with it)."""
        if 2 * len(self._known) * self.ITEM_BYTES > self.KNOWN_SHARE * self.budget:
            self._known = _Aging(self._known)
        return self._known

    def get(self, data: bytes) -> T | None:
        """The value for a blob's bytes; None when memd cannot parse it."""
        from memd.core.document import parse_document
        from memd.git.command import decode

        digest = hashlib.sha1(b"blob %d\0" % len(data))
        digest.update(data)
        key = digest.digest()
        held = self._values.get(key)
        if held is not None:
            self._values.move_to_end(key)
            return held[0]
        self.parsed += 1
        value: T | None
        try:
            value = self.derive(parse_document(decode(data), self.items()))
        except FormatError:
            value = None
        size = len(data) if self.size is None or value is None else self.size(value)
        if size <= self.budget:
            self._values[key] = (value, size)
            self.held += size
            while self.held > self.budget:
                _, (_, dropped) = self._values.popitem(last=False)
                self.held -= dropped
        return value
