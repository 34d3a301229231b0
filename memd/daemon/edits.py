"""A person's edit to a file that is memory: indexed at once, committed after a quiet period.

A document (CURRENT, a topic, a source) whose content hash differs from the
one last seen is re-indexed at once and checked, so a search finds the edit
while the person is still typing; invalid files are listed in the status and
never rewritten. Committing waits until no further change came for the quiet
period, so one editing session becomes one commit made as the person's own.
Then unsigned list items in CURRENT.md or a topic are adopted (seq,
``source=hand``) with one atomic write, under the vault lock, only if the
file is still exactly what was checked: a newer edit is never overwritten.

memd's own writes are known by hash (every action records the new content's
hash after it writes), so the event such a write causes finds nothing new. A
person's note anywhere else in the vault (``Untitled.md``, ``people/sam.md``)
is memory too: indexed, checked and committed as their edit, never rewritten.
Symbolic links are never followed: a link where memory would be is ignored.
"""

from __future__ import annotations

from memd.daemon.core import file_hash
from memd.daemon.held import Holding


class Edits(Holding):
    def _edited(self, rel: str, kind: str | None) -> None:
        if (self.vault.root / rel).is_symlink():
            return  # never followed: it may lead out of the vault (`memd lint` says so)
        digest = self._hash(rel)
        self.stats[rel] = self._stat(rel)
        if rel in self.seen and self.seen[rel] == digest:
            return  # memd's own write, or touched without a change
        self.seen[rel] = digest
        self._sync()
        if digest is None:
            self.book.invalid(rel, [])
            self.seen.pop(rel, None)
        elif kind in ("current", "topic", "note") and self._readable(digest):
            self._check(rel)
        self.settling.touch(rel, self.clock())
        if kind == "current":
            self.next_check = self.clock()

    def _settled(self, rel: str) -> None:
        if file_hash(self.vault.root / rel) != self.seen.get(rel):
            self.changes.touch(rel, self.clock())  # changed again: not quiet yet
            return
        self._hold_secrets()
        sha = self.memory.commit_hand_edits(hold=set(self.held))
        if sha:
            # The commit holds every file changed since the last one, not only
            # the file whose quiet period ended: the log names what it holds.
            files = self.memory.files_of_commit(sha)
            self.book.record("last_commit", commit=sha, kind="edit", files=list(files))
            shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
            self.log(f"committed hand edit {sha[:10]} ({shown or rel})")
        if self.vault.kind(rel) in ("current", "topic") and self._readable(self.seen.get(rel)) and rel not in self.held:
            self._adopt(rel)

    def _adopt(self, rel: str) -> None:
        if rel in self.book.data["invalid_files"]:
            return  # never rewrite a file that does not parse
        adopted = self.memory.adopt(rel, expected=self.seen.get(rel))
        if not adopted:
            return
        self._remember(rel)
        self._sync()
        self.log(f"adopted {adopted} hand-written entries in {rel}")
