"""Writing an integration into the working tree: all of it, or none.

``memd sync`` has already built the commit it moves to (a merge commit, or
the remote's own commit when it fast-forwards). Under the git lock:

1. under the vault lock, check that every file is still what HEAD holds
   (appends to CURRENT.md since are fine: they are carried over), write the
   journal ``.memd/journal/sync.json`` (HEAD before and after, each file's
   content before and after), then write each file atomically;
2. move HEAD with a compare-and-swap, and let the person's index know.

A crash anywhere leaves the journal; the next memd command (``recover``)
finishes the move when HEAD is still where it was, or undoes the writes when
someone moved HEAD since. ``state.json`` is never compared: it is derived,
and written as the merge of what is on disk (appends move the counter on)
and the target's.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from memd.core.atomic import atomic_write
from memd.core.crashpoints import crashpoint
from memd.core.errors import MemdError
from memd.core.layout import SYNC_JOURNAL
from memd.git.command import head
from memd.git.commits import git_lock
from memd.sync.files import merge_state
from memd.sync.gitops import SyncError, move_head, refresh_index, toplevel
from memd.vault.vault import Vault


class EditedDuringSync(SyncError):
    """A file changed while sync was merging; nothing was written."""


@dataclass(frozen=True)
class Change:
    path: str  # repository-relative
    before: str | None  # None: the file does not exist
    after: str | None  # None: delete it


@dataclass(frozen=True)
class Plan:
    head: str
    target: str
    changes: tuple[Change, ...]
    prefix: str  # the vault's folder in its repository

    @property
    def current(self) -> str:
        return f"{self.prefix}CURRENT.md"

    @property
    def state(self) -> str:
        return f"{self.prefix}.memd/state.json"


def _journal(vault: Vault) -> Path:
    return vault.meta_dir / SYNC_JOURNAL


def _read(top: Path, rel: str) -> str | None:
    try:
        return (top / rel).read_bytes().decode("utf-8", errors="surrogateescape")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _write(top: Path, rel: str, content: str | None) -> None:
    path = top / rel
    if content is None:
        path.unlink(missing_ok=True)
        return
    atomic_write(path, content.encode("utf-8", errors="surrogateescape"))


def appended_tail(before: str | None, now: str | None) -> str | None:
    """What memd appended to CURRENT.md since ``before`` (signed entries only), or
    None when it changed in any other way."""
    before, now = before or "", now or ""
    if not now.startswith(before):
        return None
    tail = now[len(before) :]
    for line in tail.splitlines():
        if line.strip() and not (line.startswith("- <seq=") or line.startswith((" ", "\t"))):
            return None
    return tail


def _target_content(plan: Plan, change: Change, now: str | None, *, written: bool) -> str | None:
    """What to write for ``change`` given the file as it is now; None when a
    person changed it. ``written``: the file may already hold the plan's content
    (recovery after a crash)."""
    if change.path == plan.state:
        return merge_state(change.before, now, change.after, buffer_has_entries=True)
    origins = (change.after, change.before) if written else (change.before,)
    if change.path == plan.current:
        for origin in origins:
            tail = appended_tail(origin, now)
            if tail is not None:
                after = change.after or ""
                if tail and after and not after.endswith("\n"):
                    after += "\n"
                return after + tail if tail else change.after
        return _REFUSE
    return change.after if now in origins else _REFUSE


_REFUSE = "\0refuse"  # not a text memd would ever write


def apply(vault: Vault, plan: Plan) -> None:
    """Write the plan's files and move HEAD. Raises EditedDuringSync (nothing
    written) when a file changed meanwhile or HEAD moved."""
    top = toplevel(vault)
    with git_lock(vault):
        if head(vault) != plan.head:
            raise EditedDuringSync("the repository moved on while memd was merging")
        with vault.locked():
            writes = []
            for change in plan.changes:
                content = _target_content(plan, change, _read(top, change.path), written=False)
                if content == _REFUSE:
                    raise EditedDuringSync(f"{change.path} was edited while memd was syncing; nothing was changed")
                writes.append((change.path, content))
            crashpoint()  # planned, nothing written
            payload = {"plan": {**asdict(plan), "changes": [asdict(c) for c in plan.changes]}}
            atomic_write(_journal(vault), json.dumps(payload))
            crashpoint()
            for rel, content in writes:
                _write(top, rel, content)
                crashpoint()
        if not move_head(vault, plan.target, plan.head, "memd sync"):
            with vault.locked():
                _undo(top, plan)
            _journal(vault).unlink(missing_ok=True)
            raise EditedDuringSync("the repository moved on while memd was syncing; nothing was changed")
        crashpoint()  # HEAD moved, the journal is still there
        refresh_index(vault, plan.target, [c.path for c in plan.changes])
        _journal(vault).unlink(missing_ok=True)
    crashpoint()


def _undo(top: Path, plan: Plan) -> None:
    for change in plan.changes:
        now = _read(top, change.path)
        if change.path == plan.current:
            tail = appended_tail(change.after, now)
            if tail is not None and now != change.before:
                before = change.before or ""
                _write(top, change.path, before + tail if (before or tail) else change.before)
            continue
        if change.path == plan.state:
            continue  # a counter never goes back
        if now == change.after and now != change.before:
            _write(top, change.path, change.before)


def load(vault: Vault) -> Plan | None:
    path = _journal(vault)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))["plan"]
        changes = tuple(Change(str(c["path"]), c["before"], c["after"]) for c in raw["changes"])
        plan = Plan(str(raw["head"]), str(raw["target"]), changes, str(raw["prefix"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as err:
        path.replace(path.with_suffix(".broken"))
        raise MemdError(f"ignored an unreadable sync journal ({err}); kept it as sync.broken") from None
    for change in plan.changes:
        if change.path.startswith("/") or ".." in change.path.split("/"):
            path.replace(path.with_suffix(".broken"))
            raise MemdError("ignored a sync journal naming a path outside the repository; kept it as sync.broken")
    return plan


def recover(vault: Vault) -> str | None:
    """Finish or undo a sync that was interrupted. Returns what was done."""
    try:
        plan = load(vault)
    except MemdError as err:
        return str(err)
    if plan is None:
        return None
    top = toplevel(vault)
    with git_lock(vault):
        at = head(vault)
        with vault.locked():
            planned = [(c.path, _target_content(plan, c, _read(top, c.path), written=True)) for c in plan.changes]
            if at == plan.target:
                # HEAD moved after every file was written: only a later edit can differ, and it stays.
                for rel, content in planned:
                    if content != _REFUSE and content != _read(top, rel):
                        _write(top, rel, content)
                refresh_index(vault, plan.target, [c.path for c in plan.changes])
                _journal(vault).unlink(missing_ok=True)
                return "completed an interrupted sync"
            if at == plan.head and all(content != _REFUSE for _, content in planned):
                for rel, content in planned:
                    _write(top, rel, content)
                if move_head(vault, plan.target, plan.head, "memd sync (recovered)"):
                    refresh_index(vault, plan.target, [c.path for c in plan.changes])
                    _journal(vault).unlink(missing_ok=True)
                    return "completed an interrupted sync"
            _undo(top, plan)
            _journal(vault).unlink(missing_ok=True)
    return "undid an interrupted sync (the files or the repository changed since); run memd sync again"
