"""Journaled multi-file changes: all of them happen, or none; then the commit is owed.

A consolidation writes every file's old and new content (its pre-image and
post-image, CURRENT.md and state.json included) to
``.memd/journal/pending.json``, then writes the files, each only if it is
still exactly what consolidation read. When every file is written, the
pending journal becomes ``commit.json``: the files are done and only the git
commit is owed, which runs outside the vault lock (appends never wait for
git) and is retried by the next memd run until git takes it.

Recovery of a pending journal, which every writer runs before it writes:
- each file is still its pre-image or already its post-image: roll forward;
- only CURRENT.md changed since (a person's line, an editor's save, an
  append): roll forward all the same, removing from CURRENT.md exactly the
  entries this consolidation moved into topics, keeping everything else;
- a topic changed since: roll back, and put back into CURRENT.md every entry
  the consolidation had taken out of it, so nothing moved is ever lost.
A journal of the wrong shape, or naming a path outside the vault's managed
files, was not written by memd: it is set aside with a warning.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memd.core.atomic import atomic_write, own_folder, read_bytes, refuse_read_only, refuse_read_only_folder
from memd.core.crashpoints import crashpoint
from memd.core.document import parse_document
from memd.core.entry import Entry
from memd.core.errors import MemdError, WriteError
from memd.core.layout import PENDING_JOURNAL, holds_entries
from memd.vault.vault import Vault

STATE = ".memd/state.json"


class HandEditConflict(MemdError):
    """A file changed on disk while memd was about to rewrite it."""


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to the vault root
    before: str | None  # None: the file did not exist
    after: str | None  # None: delete the file


@dataclass(frozen=True)
class Journal:
    changes: tuple[FileChange, ...]
    message: str

    @property
    def paths(self) -> list[str]:
        return [change.path for change in self.changes]


def _folder(vault: Vault) -> Any:
    return own_folder(vault.meta_dir / "journal")


def _pending(vault: Vault) -> Path:
    """The journal of a change in progress (``Vault.interrupted`` checks it), its folder checked."""
    _folder(vault)
    return vault.meta_dir / PENDING_JOURNAL


def _on_disk(vault: Vault, rel: str) -> str | None:
    try:
        return read_bytes(vault.root / rel).decode("utf-8", errors="surrogateescape")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _put(vault: Vault, rel: str, content: str | None, expect: str | bool | None = False) -> bool:
    """Write (or with None delete) a file; with ``expect``, only while it still
    holds that text (None: while it does not exist). False when it did not."""
    path = vault.root / rel
    if content is None:
        if expect is not False and _on_disk(vault, rel) != expect:
            return False
        path.unlink(missing_ok=True)
        return True
    unless: bytes | bool | None = False if expect is False or expect is True else _encode(expect)
    return atomic_write(path, content.encode("utf-8", errors="surrogateescape"), unless_changed=unless)


def _encode(content: str | None) -> bytes | None:
    return None if content is None else content.encode("utf-8", errors="surrogateescape")


REFUSED_KEPT = 10  # refused consolidations kept for inspection; the oldest go first


def keep_refused(vault: Vault, changes: tuple[FileChange, ...], problems: list[str]) -> str:
    """Keep the files a refused consolidation would have written, and why it was
    refused, under ``.memd/journal/refused/`` (for a bug report, or a person's
    own look); returns the vault-relative path."""
    from memd.core import timeutil

    folder = own_folder(_folder(vault) / "refused")
    stamp = timeutil.format_time(timeutil.now()).replace(":", "")
    path = folder / f"{stamp}.json"
    record = {"problems": problems, "changes": [asdict(c) for c in changes]}
    atomic_write(path, json.dumps(record, ensure_ascii=False, indent=1))
    for old in sorted(folder.glob("*.json"))[:-REFUSED_KEPT]:
        old.unlink(missing_ok=True)
    return vault.rel(path)


def apply(vault: Vault, journal: Journal) -> None:
    """Write the journal, then each file (pre-image checked), then owe the
    commit. Call under the vault lock; ``finish_commit`` makes the commit."""
    _check_paths(vault, journal)
    for change in journal.changes:
        refuse_read_only(vault.root / change.path)  # before anything is written: all files or none
        refuse_read_only_folder(vault.root / change.path)
    path = _pending(vault)
    crashpoint()  # planned in memory, nothing written yet
    atomic_write(path, json.dumps({"message": journal.message, "changes": [asdict(c) for c in journal.changes]}))
    crashpoint()
    done: list[FileChange] = []
    for change in journal.changes:
        # Compared again right before the rename: an editor that saved a
        # moment ago wins, and the whole change is undone.
        try:
            put = _on_disk(vault, change.path) == change.before
            put = put and _put(vault, change.path, change.after, change.before)
        except (MemdError, OSError) as err:
            # A folder made read-only, a full disk: what was written is undone, so
            # no half-applied consolidation waits on every later command. Where the
            # undo cannot write either, the journal stays, and the next writer finishes it.
            _undone(vault, done, path)
            raise WriteError(_written_why(err, change.path)) from None
        if not put:
            _undo(vault, done)
            path.unlink(missing_ok=True)
            raise HandEditConflict(
                f"{change.path} was edited while memd was consolidating; nothing was changed "
                "(your edit is kept; consolidation will run again)"
            )
        done.append(change)
        crashpoint()
    _owe(vault, journal)
    crashpoint()
    path.unlink(missing_ok=True)
    crashpoint()


def _undone(vault: Vault, done: list[FileChange], path: Path) -> None:
    try:
        _undo(vault, done)
    except (MemdError, OSError):
        return
    path.unlink(missing_ok=True)


def _written_why(err: MemdError | OSError, rel: str) -> str:
    said = str(err) if isinstance(err, MemdError) else f"could not write {rel}: {err.strerror or err}"
    return f"{said}; consolidation changed nothing (it runs again once {rel} can be written)"


def _undo(vault: Vault, done: list[FileChange]) -> None:
    for change in reversed(done):
        if _on_disk(vault, change.path) == change.after:
            _put(vault, change.path, change.before)


# -- the owed commit ---------------------------------------------------------------


def _owe(vault: Vault, journal: Journal) -> None:
    """Record the commit these written files are owed; merged into one still owed."""
    path = _folder(vault) / "commit.json"
    files = {c.path: c.after for c in journal.changes}
    message = journal.message
    previous = owed(vault)
    if previous is not None:
        files = {**previous[1], **files}
        message = f"{journal.message}\n\n(includes an earlier consolidation that was not committed: "
        message += previous[0].splitlines()[0] + ")"
    atomic_write(path, json.dumps({"message": message, "files": files}))


def _seqs_of(text: str | None) -> set[int]:
    from memd.vault.state import seqs_in_text

    return seqs_in_text(text) if text else set()


def owed(vault: Vault) -> tuple[str, dict[str, str | None]] | None:
    """The commit written files still wait for: (message, {path: content})."""
    path = _folder(vault) / "commit.json"
    try:
        raw = json.loads(read_bytes(path).decode("utf-8"))
        files = raw["files"]
        if not isinstance(raw["message"], str) or not isinstance(files, dict):
            raise TypeError("wrong shape")
        if not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in files.items()):
            raise TypeError("wrong shape")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        path.replace(path.with_suffix(".broken"))
        return None
    return raw["message"], files


def finish_commit(vault: Vault) -> tuple[str | None, str | None]:
    """Make the owed commit, if any: (sha, None) when done, (None, why) when git
    refused (the record stays and the next run tries again)."""
    from memd.git.log import blocked, commit_as_memd
    from memd.vault import acks

    record = owed(vault)
    if record is None:
        return None, None
    message, files = record
    reason = blocked(vault)
    if reason and "in progress" not in reason:
        # No repository at all: there is nothing to owe a commit to.
        (_folder(vault) / "commit.json").unlink(missing_ok=True)
        return None, f"not committed: {reason}"
    crashpoint()
    sha, note = commit_as_memd(vault, message, {p: _encode(c) for p, c in files.items()})
    crashpoint()
    if note:
        return None, f"{note} (memd will commit it on its next run)"
    with vault.locked():
        buffered = _seqs_of(_on_disk(vault, "CURRENT.md"))
        acks.prune(vault, buffered)
        (_folder(vault) / "commit.json").unlink(missing_ok=True)
    return sha, None


# -- recovery ------------------------------------------------------------------------


def _check_paths(vault: Vault, journal: Journal) -> None:
    root = vault.root.resolve()
    for change in journal.changes:
        rel = change.path
        target = (root / rel).resolve()
        if rel.startswith("/") or ".." in rel.split("/") or root not in target.parents:
            raise MemdError(f"journal path {rel!r} is outside the vault")
        if rel != STATE and not holds_entries(rel):
            raise MemdError(f"journal path {rel!r} is not a file consolidation writes")


def load(vault: Vault) -> Journal | None:
    path = _pending(vault)
    try:
        raw = json.loads(read_bytes(path).decode("utf-8"))
        if not isinstance(raw, dict) or not isinstance(raw.get("message"), str):
            raise TypeError("not a journal")
        changes = []
        for item in raw["changes"]:
            if not isinstance(item, dict) or set(item) != {"path", "before", "after"}:
                raise TypeError("not a journal")
            if not isinstance(item["path"], str) or not all(
                item[k] is None or isinstance(item[k], str) for k in ("before", "after")
            ):
                raise TypeError("not a journal")
            changes.append(FileChange(item["path"], item["before"], item["after"]))
        journal = Journal(tuple(changes), raw["message"])
        _check_paths(vault, journal)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, RecursionError, MemdError) as err:
        # memd writes its journal atomically and only with its own paths, so
        # this one was not written by memd (or was damaged): nothing in it is
        # trusted, and nothing was applied from it.
        path.replace(path.with_suffix(".broken"))
        raise MemdError(f"ignored an unreadable consolidation journal ({err}); kept it as pending.broken") from None
    return journal


def recover(vault: Vault) -> str | None:
    """Finish or undo an interrupted change (call under the vault lock).
    Returns what was done, if anything."""
    try:
        journal = load(vault)
    except MemdError as err:
        return str(err)
    if journal is None:
        return None
    path = _pending(vault)
    states = {c.path: _on_disk(vault, c.path) for c in journal.changes}
    edited = [c for c in journal.changes if states[c.path] not in (c.before, c.after)]
    if any(c.path not in ("CURRENT.md", STATE) for c in edited):
        restored = _roll_back(vault, journal, states)
        path.unlink(missing_ok=True)
        kept = ", ".join(c.path for c in edited)
        back = f"; put {restored} entries back into CURRENT.md" if restored else ""
        return f"rolled back an interrupted consolidation (kept hand edits in {kept}{back})"
    final = []
    for change in journal.changes:
        now = states[change.path]
        if change.path == STATE and now not in (change.before, change.after):
            final.append(FileChange(change.path, now, now))  # appends moved the counter on: keep it
            continue
        if change.path == "CURRENT.md" and now not in (change.before, change.after):
            after = _without_moved(now or "", change.before or "", change.after or "")
            _put(vault, change.path, after)
            final.append(FileChange(change.path, now, after))
            continue
        if now != change.after:
            _put(vault, change.path, change.after)
            crashpoint()
        final.append(change)
    _owe(vault, Journal(tuple(final), journal.message))
    path.unlink(missing_ok=True)
    return "completed an interrupted consolidation"


def _moved_blocks(before: str, after: str) -> list[Entry]:
    """The entries a consolidation took out of CURRENT.md (in ``before``, not in ``after``)."""
    kept = {"\n".join(b.lines()) for b in parse_document(after).blocks if isinstance(b, Entry)}
    return [b for b in parse_document(before).blocks if isinstance(b, Entry) and "\n".join(b.lines()) not in kept]


def _without_moved(now: str, before: str, after: str) -> str:
    """CURRENT.md as it is now, minus exactly the entries the consolidation moved."""
    moved = {"\n".join(b.lines()) for b in _moved_blocks(before, after)}
    document = parse_document(now)
    blocks = tuple(b for b in document.blocks if not (isinstance(b, Entry) and "\n".join(b.lines()) in moved))
    from dataclasses import replace

    return replace(document, blocks=blocks).render()


def _roll_back(vault: Vault, journal: Journal, states: dict[str, str | None]) -> int:
    """Undo what the journal wrote; entries it moved out of CURRENT.md go back."""
    restored = 0
    for change in reversed(journal.changes):
        now = states[change.path]
        if change.path == STATE:
            continue  # the seq counter never goes back
        if change.path == "CURRENT.md":
            if now == change.after:
                _put(vault, change.path, change.before)
            elif now != change.before:
                missing = [
                    b
                    for b in _moved_blocks(change.before or "", change.after or "")
                    if "\n".join(b.lines()) not in (now or "")
                ]
                if missing:
                    text = now or ""
                    if text and not text.endswith("\n"):
                        text += "\n"
                    text += "".join("\n".join(b.lines()) + "\n" for b in missing)
                    _put(vault, change.path, text)
                    restored = len(missing)
            continue
        if now == change.after:
            _put(vault, change.path, change.before)
    return restored
