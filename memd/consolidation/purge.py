"""``memd forget --purge``: forgotten words out of every commit too.

``memd forget`` takes entries out of the files as they are now, and git
history keeps every earlier version. A purge rewrites that history with
git-filter-repo (git's own fast-export and fast-import underneath):

- every version of every memd document loses the entries holding the seqs,
  the way forget takes them out now;
- every file, and every commit message, loses each line those entries said,
  where the line stands as it is and is long enough to be their own words
  (``LITERAL``).

The reflogs are then expired and the old objects pruned, so no object in
the repository holds the words.

Other clones learn of it through the remote. The purge ends with a commit
whose ``Memd-Purged`` trailer names the seqs. When ``memd sync`` fetches a
history that names purged seqs this clone has not purged, or one that still
holds seqs purged here, it rewrites that history the same way before it
merges. Unchanged commits keep their ids, so the histories still share their
past. A remote branch that held the old history is pushed over with a lease
on what was fetched (``sync/flow.py``). ``.memd/purged.json`` (machine-local)
keeps the seqs purged here.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from memd.core.atomic import atomic_write, read_bytes
from memd.core.document import parse_document
from memd.core.errors import GitError, MemdError
from memd.core.signature import SeqSet
from memd.git.command import cat_file, check, head, run_git
from memd.git.commits import author_env, git_lock
from memd.vault.vault import Vault

if TYPE_CHECKING:
    from pathlib import Path

TRAILER = "Memd-Purged"
RECORD = "purged.json"
# A line at least this long is taken out wherever it stands as it is (a source
# copy, a summary, a commit message); a shorter one ("Yes", "ok") only with its entry.
LITERAL = 12
_MARK = "[forgotten]"


@dataclass(frozen=True)
class Purged:
    seqs: str
    rewritten: int  # commits whose content or message changed
    remotes: tuple[str, ...]  # remotes whose branches still hold the old history

    def to_json(self) -> dict[str, Any]:
        return {"seqs": self.seqs, "rewritten": self.rewritten, "remotes_to_push": list(self.remotes)}


def scrub(data: bytes, seqs: frozenset[int], pieces: tuple[str, ...]) -> bytes:
    """``data`` without the entries holding ``seqs`` (when it is a memd document)
    and without each of ``pieces`` where it stands; ``data`` itself when neither
    is in it, so an untouched file keeps its git object and every commit that
    holds only such files keeps its id."""
    from memd.consolidation.forget import _without
    from memd.core.summary import without_quotes

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    out = text
    entries: set[int] = set()  # 0-based lines of the entries kept: another entry's words are its own
    if "<seq=" in text:
        try:
            document = parse_document(text)
            hits = [e for e in document.signed() if e.entry.signature and set(e.entry.signature.seq) & seqs]
            if hits:
                kept = _without(document.blocks, {id(e.entry) for e in hits})
                quoted = without_quotes(document.frontmatter, [e.entry.full_text for e in hits])
                document = replace(document, blocks=kept, frontmatter=quoted)
                out = document.render()
            for located in document.signed():
                first = located.line - 1
                entries.update(range(first, first + len(located.entry.lines())))
        except (MemdError, ValueError, RecursionError):
            pass  # not a document memd can read: its words go as pieces below
    if any(piece in out for piece in pieces):
        lines = out.split("\n")
        for index, line in enumerate(lines):
            if index not in entries:
                for piece in pieces:
                    line = line.replace(piece, _MARK)
                lines[index] = line
        out = "\n".join(lines)
    return data if out == text else out.encode("utf-8")


def pieces_of(texts: Iterable[str]) -> tuple[str, ...]:
    """The lines of entries' texts long enough to be taken out wherever they stand,
    longest first (a line inside a longer one goes after it)."""
    found = {line.strip() for text in texts for line in text.splitlines()}
    return tuple(sorted((p for p in found if len(p) >= LITERAL), key=lambda p: (-len(p), p)))


def said_in_history(vault: Vault, seqs: frozenset[int], revisions: Iterable[str] = ("--all",)) -> list[str]:
    """The texts of every entry holding one of ``seqs`` in any file version
    reachable from ``revisions`` (each version as it was: a hand edit or a
    fold said it differently)."""
    from memd.vault.state import seqs_in_text

    listed = check(run_git(vault, "rev-list", "--objects", *revisions), "rev-list").stdout.splitlines()
    blobs = sorted({line.split(" ", 1)[0] for line in listed if line.endswith(".md") and " " in line})
    texts: list[str] = []
    for found in cat_file(vault.root, blobs):
        if found is None or found.kind != "blob" or b"<seq=" not in found.data:
            continue
        text = found.data.decode("utf-8", errors="replace")
        if not seqs_in_text(text) & seqs:
            continue
        try:
            document = parse_document(text)
        except (MemdError, ValueError, RecursionError):
            continue
        for located in document.signed():
            if located.entry.signature and set(located.entry.signature.seq) & seqs:
                texts.append(located.entry.full_text)
    return texts


def said_in_messages(vault: Vault, seqs: frozenset[int], revisions: Iterable[str] = ("--all",)) -> list[str]:
    """The words consolidation messages quote of entries holding one of ``seqs``
    (a consolidation records, with its words, what it superseded while both were
    in the buffer: such an entry is in no file of any commit)."""
    log = run_git(vault, "log", "--format=%B%x00", *revisions).stdout
    return [said for message in log.split("\0") for said in _quoted(message, seqs)[1]]


def scrub_message(message: str, seqs: frozenset[int], pieces: tuple[str, ...]) -> str:
    """A commit message without what it says of the entries holding ``seqs``: an
    entry it quotes (every line of it, however short), the reason of a
    supersession by one of them (it names the new value), and each of ``pieces``."""
    out = _quoted(message, seqs)[0]
    for piece in pieces:
        out = out.replace(piece, _MARK)
    return out


def _quoted(message: str, seqs: frozenset[int]) -> tuple[str, list[str]]:
    """``message`` with the words it says of ``seqs`` marked forgotten, and those words."""
    lines = message.split("\n")
    said: list[str] = []
    quoting = -1  # the indentation of an entry being taken out: its continuation lines go with it
    for index, line in enumerate(lines):
        depth = len(line) - len(line.lstrip(" "))
        if quoting >= 0 and line.strip() and depth > quoting and not _QUOTED.match(line):
            said.append(line.strip())
            lines[index] = " " * depth + _MARK
            continue
        quoting = -1
        quoted, reason = _QUOTED.match(line), _REASON.match(line)
        if quoted and _holds(quoted.group(2), seqs):
            said.append(quoted.group(3).strip())
            lines[index] = line[: quoted.start(3)] + _MARK
            quoting = depth
        elif reason and _holds(reason.group(1), seqs):
            lines[index] = line[: reason.start(2)] + _MARK
    return "\n".join(lines), [text for text in said if text and text != _MARK]


def _holds(value: str, seqs: frozenset[int]) -> bool:
    try:
        return not seqs.isdisjoint(SeqSet.parse(value))
    except MemdError:
        return False


# An entry a message quotes ("    - <seq=4,time=...> Dana's phone is 555-0101"), and a
# supersession's line ("seq 7 supersedes seq 4: dana's phone: now '555 0199'").
_QUOTED = re.compile(r"^(\s*[-*+] )<seq=([0-9+\-]+)(?:,[^>\n]*)?>[ \t]*(.*)$")
_REASON = re.compile(r"^seq ([0-9+\-]+) supersedes seq [0-9+\-]+: (.*)$")


def purged(vault: Vault) -> frozenset[int]:
    """The seqs purged from this clone's history."""
    try:
        raw = json.loads(read_bytes(vault.meta_dir / RECORD).decode("utf-8"))
        return frozenset(SeqSet.parse(str(raw["seqs"]))) if raw.get("seqs") else frozenset()
    except (OSError, ValueError, KeyError, TypeError, AttributeError, MemdError):
        return frozenset()


def purged_in_history(vault: Vault) -> frozenset[int]:
    """The seqs every ``Memd-Purged`` trailer of this clone's history names: a clone
    made after a purge has no record of its own (``purged``), its history has."""
    found: set[int] = set()
    for value in run_git(vault, "log", f"--format=%(trailers:key={TRAILER},valueonly)").stdout.split():
        with contextlib.suppress(MemdError):
            found |= set(SeqSet.parse(value))
    return frozenset(found)


def _remember(vault: Vault, seqs: frozenset[int]) -> None:
    both = purged(vault) | seqs
    atomic_write(vault.meta_dir / RECORD, json.dumps({"seqs": str(SeqSet.of(both))}) + "\n")


def purge(vault: Vault, seqs: frozenset[int], texts: Iterable[str] = (), *, paths: Iterable[str] = ()) -> Purged:
    """Rewrite every branch, tag and remote-tracking branch without the words of
    the entries holding ``seqs`` (``texts``: their words as they are now, found
    in history too) and without the files at ``paths`` (a source copy taken
    back), commit the record other clones act on, and prune the old objects.
    Call after ``forget``, so the files now hold none of them."""
    if head(vault) is None:
        raise GitError("the vault's repository has no commit to purge")
    span = str(SeqSet.of(seqs))
    pieces = pieces_of([*texts, *said_in_history(vault, seqs), *said_in_messages(vault, seqs)])
    before = _tips(vault)
    with git_lock(vault):  # no memd commit lands half-way through
        rewritten = rewrite(vault, seqs, pieces, tuple(paths))
    _remember(vault, seqs)
    message = f"purge: seq {span}\n\n{TRAILER}: {span}"
    with git_lock(vault):  # the person's act, under their name, as forget's commit is
        check(run_git(vault, "commit", "-q", "--allow-empty", "-m", message, env=author_env(None, vault)), "commit")
    forget_copies(vault, seqs)  # after the record other clones act on, which nothing may delay
    after = _tips(vault)
    moved = {ref for ref, sha in before.items() if ref.startswith("refs/remotes/") and after.get(ref) != sha}
    remotes = sorted({ref.split("/")[2] for ref in moved})
    return Purged(span, rewritten, tuple(remotes))


def after_fetch(vault: Vault, theirs: str | None, tracking: str) -> tuple[str | None, str | None]:
    """A fetched history made to agree with this clone's purges, before sync merges it.

    Returns the fetched commit as this clone now has it, and, when rewriting
    changed it, the commit that was fetched: the remote's branch still holds
    those words, and sync pushes over exactly that commit. A history that names
    seqs purged elsewhere (its ``Memd-Purged`` trailers) has them forgotten
    here, in the files and in every commit. A history that still holds seqs
    purged here is rewritten the same way. Costs nothing when neither is so.
    ``tracking`` is the remote-tracking ref the fetch updated."""
    if theirs is None:
        return None, None
    mine = purged(vault)
    new = [theirs, "--not", "--branches"]
    named: set[int] = set()
    trailers = run_git(vault, "log", f"--format=%(trailers:key={TRAILER},valueonly)", *new).stdout.split()
    for value in trailers:
        try:
            named |= set(SeqSet.parse(value))
        except MemdError:
            continue
    wanted = frozenset(named) - mine
    if not wanted and not (mine and said_in_history(vault, mine, new)):
        return theirs, None
    if wanted:
        from memd.consolidation.forget import forget
        from memd.core.errors import NotFound

        with contextlib.suppress(NotFound):  # none of them is in this clone's files
            forget(vault, SeqSet.of(wanted))
    seqs = mine | wanted
    with git_lock(vault):
        rewrite(vault, seqs, pieces_of([*said_in_history(vault, seqs), *said_in_messages(vault, seqs)]))
    _remember(vault, seqs)
    forget_copies(vault, seqs)
    now = _tips(vault).get(tracking, theirs)
    return now, (theirs if now != theirs else None)


def forget_copies(vault: Vault, seqs: frozenset[int]) -> None:
    """The copies of the words this machine keeps outside git, gone too: the
    acknowledgement of each forgotten entry (which put an entry an editor's save
    wiped back, and an undo back in the buffer), the consolidation catalog's
    record of the topics and the snapshots ``--as-of`` searches read. The
    catalog and the snapshots are derived: the next consolidation or search
    builds them again from what the files hold now."""
    from memd.consolidation.catalog_db import remove
    from memd.vault import acks

    with vault.locked():
        acks.settle(vault, seqs)
        remove(vault)
        shutil.rmtree(vault.index_dir / "asof", ignore_errors=True)


def _tips(vault: Vault) -> dict[str, str]:
    """Every ref, by name, with the commit it points to."""
    lines = run_git(vault, "for-each-ref", "--format=%(refname) %(objectname)").stdout.splitlines()
    return {name: sha for name, _, sha in (line.partition(" ") for line in lines) if sha}


def rewrite(vault: Vault, seqs: frozenset[int], pieces: tuple[str, ...], paths: tuple[str, ...] = ()) -> int:
    """Rewrite every ref's history through ``scrub``; the number of commits that
    changed. The working tree keeps what it holds that the commits do not (a
    buffer not yet committed, an edit), without the words."""
    from pathlib import Path

    old_head = head(vault)
    top = Path(check(run_git(vault, "rev-parse", "--show-toplevel"), "rev-parse").stdout.strip())
    git_dir = Path(check(run_git(vault, "rev-parse", "--absolute-git-dir"), "rev-parse").stdout.strip())
    prefix = run_git(vault, "rev-parse", "--show-prefix").stdout.strip()
    paths = tuple(prefix + path for path in paths)
    spec = git_dir / "memd-purge.json"
    spec.write_text(json.dumps({"seqs": sorted(seqs), "pieces": list(pieces), "paths": list(paths)}), encoding="utf-8")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memd.consolidation.purge", str(spec)],
            cwd=top,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
        )
    finally:
        spec.unlink(missing_ok=True)
    if done.returncode != 0:
        raise GitError(f"git filter-repo could not rewrite the history: {(done.stderr or done.stdout).strip()[-300:]}")
    changed = int(done.stdout.strip().rsplit("\n", 1)[-1] or 0)
    new_head = head(vault)
    if old_head and new_head and old_head != new_head:
        _mend_working_tree(vault, top, old_head, new_head, seqs, pieces)
    shutil.rmtree(git_dir / "filter-repo", ignore_errors=True)
    check(run_git(vault, "reflog", "expire", "--expire=now", "--all"), "reflog expire")
    check(run_git(vault, "gc", "--quiet", "--prune=now"), "gc")
    return changed


def _mend_working_tree(
    vault: Vault, top: Path, old: str, new: str, seqs: frozenset[int], pieces: tuple[str, ...]
) -> None:
    """Files the rewrite changed in HEAD's tree, changed alike in the working
    tree (filter-repo would reset it, losing what is not committed), then the
    index read from the new HEAD."""
    paths = run_git(vault, "diff", "--name-only", "-z", old, new).stdout.split("\0")
    for rel in filter(None, paths):
        path = top / rel
        try:
            data = read_bytes(path)
        except OSError:
            continue
        clean = scrub(data, seqs, pieces)
        if clean != data:
            atomic_write(path, clean)
    check(run_git(vault, "reset", "-q"), "reset")


def _child(spec_path: str) -> None:
    """Run in its own process (filter-repo works in the current folder and prints)."""
    import git_filter_repo as fr  # type: ignore[import-untyped]

    with open(spec_path, encoding="utf-8") as stream:
        spec = json.load(stream)
    seqs = frozenset(int(seq) for seq in spec["seqs"])
    pieces = tuple(spec["pieces"])
    dropped = {path.encode("utf-8") for path in spec.get("paths", ())}

    def filename(name: bytes) -> bytes | None:
        return None if name in dropped else name

    def blob(found: Any, _metadata: Any) -> None:
        found.data = scrub(found.data, seqs, pieces)

    def commit(found: Any, _metadata: Any) -> None:
        text = found.message.decode("utf-8", errors="surrogateescape")
        clean = scrub_message(text, seqs, pieces)
        if clean != text:
            found.message = clean.encode("utf-8", errors="surrogateescape")

    class Filter(fr.RepoFilter):
        def cleanup(self, repo: Any, repack: Any, reset: Any, **rest: Any) -> None:
            # No `git reset --hard`: the working tree keeps a buffer not yet committed.
            super().cleanup(repo, repack, False, **rest)

    args = fr.FilteringOptions.parse_args(["--force", "--partial", "--quiet", "--replace-refs", "delete-no-add"])
    before = _commits()
    Filter(args, filename_callback=filename, blob_callback=blob, commit_callback=commit).run()
    print(len(before - _commits()))


def _commits() -> set[str]:
    from memd.git.command import run

    return set(run(".", "rev-list", "--all").stdout.split())


if __name__ == "__main__":
    _child(sys.argv[1])
