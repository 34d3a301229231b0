"""``memd forget``: a person removes entries on purpose, and history says so.

The entries holding the given seqs are taken out of CURRENT.md or their
topic (each file compare-and-swapped, nothing else in it touched), and the
change is committed under the person's name with a ``Memd-Removed`` trailer,
so memd never puts them back and ``memd verify`` counts them as removed by
hand.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from memd.core.atomic import atomic_write, read_text
from memd.core.document import parse_document
from memd.core.entry import Entry
from memd.core.errors import GitError, NotFound, VaultError
from memd.core.signature import SeqSet
from memd.core.summary import without_quotes
from memd.git.commits import commit_exact
from memd.git.edits import held_warning, secrets_in
from memd.git.log import blocked
from memd.vault import acks
from memd.vault.vault import Vault


@dataclass(frozen=True)
class Forgotten:
    seqs: str
    entries: tuple[tuple[str, int, str], ...]  # (path, line, text) of each removed entry
    commit: str | None
    warning: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "seqs": self.seqs,
            "removed": [{"path": p, "line": n, "text": t} for p, n, t in self.entries],
            "commit": self.commit,
            "warning": self.warning,
        }


def forget(vault: Vault, seqs: SeqSet) -> Forgotten:
    wanted = set(seqs)
    removed: list[tuple[str, int, str]] = []
    found: set[int] = set()
    written: dict[str, bytes | None] = {}
    with vault.locked():
        for path in vault.entry_files():
            rel = vault.rel_of(path)
            text = read_text(path, rel)
            document = parse_document(text)
            hits = [e for e in document.signed() if e.entry.signature and set(e.entry.signature.seq) & wanted]
            if not hits:
                continue
            for located in hits:
                held = set(located.entry.signature.seq) if located.entry.signature else set()
                if not held <= wanted:
                    raise VaultError(
                        f"{rel}:{located.line}: seq {located.entry.signature} holds more than the seqs given; "
                        f"forget all of them ({located.entry.signature.seq if located.entry.signature else ''})"
                    )
                removed.append((rel, located.line, located.entry.full_text))
                found |= held
            gone = {id(e.entry) for e in hits}
            kept = tuple(b for b in document.blocks if not (isinstance(b, Entry) and id(b) in gone))
            frontmatter = without_quotes(document.frontmatter, [e.entry.full_text for e in hits])
            new_text = replace(document, blocks=kept, frontmatter=frontmatter).render()
            if not atomic_write(path, new_text, unless_changed=text.encode("utf-8")):
                raise VaultError(f"{rel} changed while memd was reading it; nothing was forgotten, try again")
            written[rel] = new_text.encode("utf-8")
        if not removed:
            raise NotFound(f"no entry holds seq {seqs}")
        acks.settle(vault, found)
    span = str(SeqSet.of(found))
    if blocked(vault) is not None:
        return Forgotten(span, tuple(removed), None, "not committed: " + str(blocked(vault)))
    # A file that may hold a secret typed by hand is left out, as every commit of a
    # person's edits leaves it (git keeps what it is given for good): the removal is
    # committed with the rest of their edit once the secret is gone.
    secret = {rel: lines for rel, data in written.items() if data and (lines := secrets_in(data.decode()))}
    warning = "; ".join(held_warning(rel, found) for rel, found in sorted(secret.items())) or None
    clean = {rel: data for rel, data in written.items() if rel not in secret}
    if not clean:
        return Forgotten(span, tuple(removed), None, warning)
    message = f"forget: seq {span}\n\nMemd-Removed: {span}"
    try:
        sha = commit_exact(vault, message, clean, None)
    except GitError as err:
        return Forgotten(span, tuple(removed), None, f"not committed: {err}")
    return Forgotten(span, tuple(removed), sha, warning)
