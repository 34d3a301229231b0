"""A changed file in which lint finds a possible secret is never committed.

Git history keeps whatever it is given for good, so the daemon holds such a
file back (status ``held_files``, the log, stderr) until the person removes
the secret or commits the file themselves. Both committing a person's edit
(edits.py) and consolidating (consolidating.py) would carry the file into a
commit, so both ask this part first.
"""

from __future__ import annotations

from memd.core.layout import DOCUMENT_KINDS
from memd.daemon.core import Core


class Holding(Core):
    def _hold_secrets(self) -> None:
        """Hold back every changed file in which lint finds a possible secret:
        memd never commits one (git history keeps it for good); the person
        removes the secret, or commits the file themselves if it is none."""
        from memd.core.atomic import read_text
        from memd.git.edits import held_warning, secrets_in
        from memd.git.log import blocked, changed_paths

        if blocked(self.vault) is not None:
            return
        held: dict[str, list[str]] = {}
        for rel in changed_paths(self.vault):
            if self.vault.kind(rel) not in DOCUMENT_KINDS:
                continue
            try:
                found = secrets_in(read_text(self.vault.root / rel, rel))
            except Exception:
                continue  # unreadable: `memd lint` reports it
            if found:
                held[rel] = found
        for rel in sorted(held.keys() - self.held.keys()):
            self.log(held_warning(rel, held[rel]))
        for rel in sorted(self.held.keys() - held.keys()):
            self.log(f"{rel}: no possible secret left; committing it")
        self.held = held
        if held != self.book.data.get("held_files"):
            self.book.set("held_files", held)
