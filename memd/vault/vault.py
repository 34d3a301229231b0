"""The vault on disk: where things live, how it is found and created."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memd.core.atomic import read_text
from memd.core.config import Config, load_config
from memd.core.errors import GitError, NotFound, VaultError
from memd.core.layout import (
    CURRENT_NAME,
    DOCUMENT_KINDS,
    INBOX,
    SCRATCH_PATTERNS,
    classify,
    counts_entries,
    skipped_dir,
    utf8_name,
    vault_root,
)
from memd.core.layout import doc_id as _doc_id

if TYPE_CHECKING:
    from memd.core.document import Document

CURRENT_TEMPLATE = """\
# CURRENT

Recent memories, newest last. memd appends here and moves entries into
`topics/` when it consolidates; edit freely, memd never drops a line it
did not account for.

"""
GITIGNORE_TEMPLATE = (
    """\
# memd: derived or machine-local files (the index is rebuilt by `memd reindex`)
.memd/index/
.memd/lock
.memd/journal/
.memd/logs/
.memd/ledger.jsonl
.memd/acks.jsonl
.memd/purged.json
.memd/git.lock
.memd/seq.local
.memd/verify.json
.memd/daemon.*
*.memd-tmp
# raw drops (transcripts may hold secrets); their redacted copies live in sources/
inbox/
# Obsidian: the window layout and caches change with every click; its settings stay versioned
.obsidian/workspace*
.obsidian/cache
# editors' and tools' scratch files: backups, swap and lock files, partial downloads
"""
    + "\n".join(SCRATCH_PATTERNS)
    + "\n"
)


def missing_ignores(gitignore: str) -> list[str]:
    """The patterns of memd's ``.gitignore`` that ``gitignore`` lacks, in template order.

    A vault made by an older memd ignores fewer of the files memd now keeps
    under ``.memd/``; unignored, a ``git add -A`` would commit machine-local
    state such as ``.memd/seq.local`` and carry it to other devices."""
    present = {line.strip() for line in gitignore.splitlines()}
    # The scratch patterns are not asked of an older vault: memd skips those files itself
    # (``layout.scratch``); a new vault's .gitignore has them for the person's own git.
    wanted = [
        line
        for line in GITIGNORE_TEMPLATE.splitlines()
        if line and not line.startswith("#") and line not in SCRATCH_PATTERNS
    ]
    # A pattern ignoring all of .memd/ covers every one of memd's files in it.
    whole = bool(present & {".memd", ".memd/", "/.memd", "/.memd/", ".memd/*", "/.memd/*", ".memd/**", "/.memd/**"})
    return [line for line in wanted if line not in present and not (whole and line.startswith(".memd/"))]


# A folder or file changed this recently may change again within the same
# mtime tick and keep its stamp: such a stamp is not trusted next time.
RACY_SECONDS = 2.0


def trusted_stamp(mtime_ns: int, now_ns: int) -> int:
    """``mtime_ns``, or -1 (unknown: look again) when it is too recent to vouch for anything."""
    return -1 if now_ns - mtime_ns < RACY_SECONDS * 1e9 else mtime_ns


def stamps_hold(root: Path, stamps: Mapping[str, int]) -> bool:
    """Whether every folder's stamp (vault-relative folder -> ``trusted_stamp``
    of its mtime) still holds, one stat a folder: if so, no file in them was
    created, deleted or renamed since. An unknown stamp (-1) never holds."""
    base = str(root) + os.sep
    try:
        return all(mtime >= 0 and os.lstat(base + folder).st_mtime_ns == mtime for folder, mtime in stamps.items())
    except OSError:
        return False


@dataclass(frozen=True)
class Listing:
    """One folder of the vault as ``Vault.listings`` read it."""

    prefix: str  # vault-relative, ending in "/" ("" for the root)
    mtime_ns: int  # taken before the folder was listed
    entries: list[os.DirEntry[str]]
    # Names that are not UTF-8 (``layout.utf8_name``): left out of ``entries``.
    misnamed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Vault:
    """A vault folder: where each of its parts lives, its settings, its lock, and its files as memd reads them."""

    root: Path

    @property
    def current(self) -> Path:
        return self.root / CURRENT_NAME

    @property
    def topics_dir(self) -> Path:
        return self.root / "topics"

    @property
    def sources_dir(self) -> Path:
        return self.root / "sources"

    @property
    def inbox_dir(self) -> Path:
        return self.root / "inbox"

    @property
    def meta_dir(self) -> Path:
        return self.root / ".memd"

    def interrupted(self, journal: str) -> bool:
        """Whether an interrupted change left ``journal`` to be finished or undone
        (``layout.PENDING_JOURNAL``: a consolidation or a forget; ``layout.SYNC_JOURNAL``:
        a sync): one stat, so every verb checks it without importing what writes it."""
        return (self.meta_dir / journal).exists()

    @property
    def config_path(self) -> Path:
        return self.meta_dir / "config.toml"

    @property
    def state_path(self) -> Path:
        return self.meta_dir / "state.json"

    @property
    def index_dir(self) -> Path:
        return self.meta_dir / "index"

    @property
    def config(self) -> Config:
        # Read each time (a small file): a long-running daemon must see edits.
        return load_config(self.config_path, cache=self.index_dir / "config.json")

    @contextmanager
    def locked(self, timeout: float | None = None) -> Iterator[None]:
        from memd.core.lock import vault_lock

        with vault_lock(self.meta_dir / "lock", self.config.lock_timeout if timeout is None else timeout):
            yield

    def rel(self, path: Path) -> str:
        """Vault-relative path of ``path``; a path that leads out of the vault
        (through ``..`` or a symbolic link) is refused, never followed."""
        if path.is_absolute() and ".." not in path.parts:
            try:
                return path.relative_to(self.root).as_posix()
            except ValueError:
                pass
        root = self.root.resolve()
        try:
            return path.resolve().relative_to(root).as_posix()
        except (ValueError, OSError, RuntimeError):
            raise VaultError(
                f"{path} is outside the vault {self.root} (memd does not follow links out of it)"
            ) from None

    @property
    def ignore(self) -> tuple[str, ...]:
        """The person's ``[vault] ignore`` patterns (none when the settings are broken)."""
        from memd.core.errors import ConfigError

        try:
            return self.config.ignore
        except ConfigError:
            return ()

    def kind(self, rel: str) -> str | None:
        """``classify`` with this vault's ignore patterns."""
        return classify(rel, self.ignore)

    def walk(self) -> Iterator[str]:
        """Vault-relative paths of the regular files memd may look at, sorted.

        Symbolic links are never followed or listed (a link in ``topics/`` to
        ``/etc/passwd`` must not become memory), and folders memd never reads
        (``.git``, ``.memd``, ``.obsidian``, hidden ones) are not entered.
        """
        return iter(self._scan()[0])

    def links(self) -> list[str]:
        """Vault-relative paths of the symbolic links ``walk`` skips."""
        return self._scan()[1]

    def listings(self) -> Iterator[Listing]:
        """Every folder memd reads, with its entries: the one rule for which
        folders are entered (not links, not ``.git``/``.memd``/hidden ones, not
        the inbox). A folder's mtime is taken before it is listed, so a file
        created between the two makes the folder look changed next time rather
        than go unseen; a folder that cannot be read is left out."""
        stack = [("", str(self.root))]
        while stack:
            prefix, folder = stack.pop()
            try:
                mtime = os.stat(folder, follow_symlinks=False).st_mtime_ns
                with os.scandir(folder) as listing:
                    items = list(listing)
            except OSError:
                continue
            misnamed = tuple(f"{prefix}{entry.name}" for entry in items if not utf8_name(entry.name))
            if misnamed:
                items = [entry for entry in items if utf8_name(entry.name)]
            for entry in items:
                try:
                    if (
                        not entry.is_symlink()
                        and entry.is_dir(follow_symlinks=False)
                        and not skipped_dir(entry.name)
                        and not (prefix == "" and entry.name == INBOX)
                    ):
                        stack.append((f"{prefix}{entry.name}/", entry.path))
                except OSError:
                    continue
            yield Listing(prefix, mtime, items, misnamed)

    def misnamed(self) -> list[str]:
        """Vault-relative paths (undecodable bytes shown as ``\\xff``) that
        ``walk`` skips because their names are not UTF-8."""
        found = [rel for listing in self.listings() for rel in listing.misnamed]
        return sorted(rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") for rel in found)

    def _scan(self) -> tuple[list[str], list[str]]:
        found: list[str] = []
        links: list[str] = []
        for listing in self.listings():
            for entry in listing.entries:
                rel = f"{listing.prefix}{entry.name}"
                try:
                    if entry.is_symlink():
                        links.append(rel)
                    elif entry.is_file(follow_symlinks=False):
                        found.append(rel)
                except OSError:
                    continue
        return sorted(found), sorted(links)

    def documents(self) -> list[Path]:
        """Every file that is memory (CURRENT, topics, sources, notes), sorted by path."""
        ignore = self.ignore
        return [self.root / rel for rel in self.walk() if classify(rel, ignore) in DOCUMENT_KINDS]

    def entry_files(self) -> list[Path]:
        """The documents whose signed entries are memory: CURRENT, topics and notes."""
        return [self.root / rel for rel in self.entry_rels()]

    def entry_rels(self) -> list[str]:
        """``entry_files`` as vault-relative paths (no path objects: every add reads them all)."""
        return sorted(self.entry_listing()[0], key=lambda rel: (rel != CURRENT_NAME, rel))

    def entry_listing(self) -> tuple[list[str], dict[str, int]]:
        """``entry_rels`` unsorted, with a stamp per folder entered (``trusted_stamp``
        of its mtime, keyed by its prefix): while ``stamps_hold`` says they hold,
        no file was created, deleted or renamed and the list still stands."""
        import time

        ignore = self.ignore
        now = time.time_ns()
        rels: list[str] = []
        stamps: dict[str, int] = {}
        for listing in self.listings():
            stamps[listing.prefix] = trusted_stamp(listing.mtime_ns, now)
            for entry in listing.entries:
                rel = listing.prefix + entry.name
                try:
                    if not entry.is_symlink() and entry.is_file(follow_symlinks=False) and counts_entries(rel, ignore):
                        rels.append(rel)
                except OSError:
                    continue
        return rels, stamps

    def topic_files(self) -> list[Path]:
        topics = (rel for rel in self.walk() if classify(rel) == "topic")
        return [self.root / rel for rel in sorted(topics, key=lambda rel: rel.split("/"))]

    def note_files(self) -> list[Path]:
        """The person's own Markdown files outside CURRENT, topics and sources."""
        ignore = self.ignore
        return [self.root / rel for rel in self.walk() if classify(rel, ignore) == "note"]

    def rel_of(self, path: Path) -> str:
        """Vault-relative path of a path under the root (no symlink resolution)."""
        return path.relative_to(self.root).as_posix()

    def doc_id(self, path: Path) -> str:
        """``topics/coffee.md`` -> ``coffee``; CURRENT.md -> ``CURRENT``."""
        return _doc_id(self.rel(path))

    def resolve_doc(self, name: str) -> Path:
        """Find a document by id (``coffee``), path (``topics/coffee.md``) or CURRENT."""
        cleaned = name.strip().removeprefix("./")
        if cleaned in ("CURRENT", CURRENT_NAME, ""):
            return self.current
        candidates = [cleaned] if cleaned.endswith(".md") else [f"{cleaned}.md"]
        candidates += [f"topics/{c}" for c in list(candidates) if not c.startswith("topics/")]
        root = self.root.resolve()
        # No file name holds a NUL (the operating system refuses it with a ValueError, not an OSError).
        for candidate in [] if "\x00" in cleaned else candidates:
            try:
                path = (root / candidate).resolve()
                if root not in path.parents or not path.is_file():
                    continue
            except OSError:  # a name too long for the file system (or a loop of links): no such document
                continue
            if self.kind(path.relative_to(root).as_posix()) in DOCUMENT_KINDS:
                return path
        raise NotFound(
            f"no document {name[:200]!r} in the vault",
            hints={"cli": "try `memd list`", "mcp": "call memory_list to see the documents"},
        )

    def read(self, path: Path) -> Document:
        from memd.core.document import parse_document

        return parse_document(read_text(path, self.rel(path)))


def find_vault(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Vault:
    """``--vault``, then ``MEMD_VAULT``, then the current folder and its parents."""
    return Vault(vault_root(explicit, cwd))


def in_git_repo(path: Path) -> bool:
    from memd.git import command as gitcli

    try:
        result = gitcli.run(path, "rev-parse", "--is-inside-work-tree")
    except GitError:
        return False
    return result.returncode == 0 and result.stdout.strip() == "true"
