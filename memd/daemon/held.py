"""A changed file in which lint finds a possible secret is never committed.

Git history keeps whatever it is given for good, so the daemon holds such a
file back (status ``held_files``, the log, stderr) until the person removes
the secret or commits the file themselves. Both committing a person's edit
(edits.py) and consolidating (consolidating.py) would carry the file into a
commit, so both ask this part first.
"""

from __future__ import annotations

from memd.app.watching import held_warning
from memd.daemon.core import Core


class Holding(Core):
    def _hold_secrets(self) -> None:
        """Hold back every changed file in which lint finds a possible secret:
        memd never commits one (git history keeps it for good); the person
        removes the secret, or commits the file themselves if it is none."""
        held = self.memory.possible_secrets()
        for rel in sorted(held.keys() - self.held.keys()):
            self.log(held_warning(rel, held[rel]))
        for rel in sorted(self.held.keys() - held.keys()):
            self.log(f"{rel}: no possible secret left; committing it")
        self.held = held
        if held != self.book.data.get("held_files"):
            self.book.set("held_files", held)
