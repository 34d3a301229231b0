"""The vault on disk: where things live, how it is found and created."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .atomic import read_text
from .config import Config, load_config
from .document import Document, parse_document
from .errors import NotFound, VaultError, VaultNotFound
from .layout import CURRENT_NAME, classify, holds_entries
from .layout import doc_id as _doc_id

CURRENT_TEMPLATE = """\
# CURRENT

Recent memories, newest last. memd appends here and moves entries into
`topics/` when it consolidates; edit freely, memd never drops a line it
did not account for.

"""
GITIGNORE_TEMPLATE = """\
# memd: derived or machine-local files (the index is rebuilt by `memd reindex`)
.memd/index/
.memd/lock
.memd/journal/
.memd/logs/
.memd/ledger.jsonl
.memd/acks.jsonl
.memd/git.lock
.memd/seq.local
.memd/verify.json
.memd/daemon.*
*.memd-tmp
# raw drops (transcripts may hold secrets); their redacted copies live in sources/
inbox/
"""
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*(?:/[a-z0-9][a-z0-9-]*)*$")


@dataclass(frozen=True)
class Vault:
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
        return load_config(self.config_path)

    @contextmanager
    def locked(self, timeout: float | None = None) -> Iterator[None]:
        from .lock import vault_lock

        with vault_lock(self.meta_dir / "lock", self.config.lock_timeout if timeout is None else timeout):
            yield

    def rel(self, path: Path) -> str:
        """Vault-relative path; a path given through a link or ``..`` is resolved first."""
        if path.is_absolute() and ".." not in path.parts:
            try:
                return path.relative_to(self.root).as_posix()
            except ValueError:
                pass
        return path.resolve().relative_to(self.root.resolve()).as_posix()

    def documents(self) -> list[Path]:
        """Every file that is memory (CURRENT, topics, sources), sorted by path."""
        found = [self.current] if self.current.is_file() else []
        for folder in (self.topics_dir, self.sources_dir):
            if folder.is_dir():
                found += [p for p in folder.rglob("*.md") if classify(self.rel_of(p)) and p.is_file()]
        return sorted(found, key=self.rel_of)

    def entry_files(self) -> list[Path]:
        """The documents whose signed entries are memory: CURRENT and topics."""
        found = [self.current] if self.current.is_file() else []
        if self.topics_dir.is_dir():
            found += sorted(p for p in self.topics_dir.rglob("*.md") if holds_entries(self.rel_of(p)) and p.is_file())
        return found

    def topic_files(self) -> list[Path]:
        return [p for p in self.entry_files() if p != self.current]

    def rel_of(self, path: Path) -> str:
        """Vault-relative path of a path under the root (no symlink resolution)."""
        return path.relative_to(self.root).as_posix()

    def doc_id(self, path: Path) -> str:
        """``topics/coffee.md`` -> ``coffee``; CURRENT.md -> ``CURRENT``."""
        return _doc_id(self.rel(path))

    def topic_path(self, doc_id: str) -> Path:
        if not _SLUG.match(doc_id):
            raise VaultError(f"invalid topic id {doc_id!r} (use lowercase letters, digits and -)")
        return self.topics_dir / f"{doc_id}.md"

    def resolve_doc(self, name: str) -> Path:
        """Find a document by id (``coffee``), path (``topics/coffee.md``) or CURRENT."""
        cleaned = name.strip().removeprefix("./")
        if cleaned in ("CURRENT", CURRENT_NAME, ""):
            return self.current
        candidates = [cleaned] if cleaned.endswith(".md") else [f"{cleaned}.md"]
        candidates += [f"topics/{c}" for c in list(candidates) if not c.startswith("topics/")]
        root = self.root.resolve()
        for candidate in candidates:
            path = (root / candidate).resolve()
            if root in path.parents and path.is_file():
                return path
        raise NotFound(
            f"no document {name!r} in the vault",
            hints={"cli": "try `memd list`", "mcp": "call memory_list to see the documents"},
        )

    def read(self, path: Path) -> Document:
        return parse_document(read_text(path, self.rel(path)))


def find_vault(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Vault:
    """``--vault``, then ``MEMD_VAULT``, then the current folder and its parents."""
    given = explicit if explicit is not None else os.environ.get("MEMD_VAULT") or None
    if given is not None:
        path = Path(given).expanduser()
        if path.is_file():
            raise VaultError(f"{path} is a file, not a vault folder")
        if not (path / ".memd").is_dir():
            raise VaultNotFound(f"{path} is not a memd vault (no .memd/ folder); create one with `memd init {path}`")
        return Vault(path.resolve())
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / ".memd").is_dir():
            return Vault(folder)
    raise VaultNotFound("no memd vault here or in any parent folder; create one with `memd init PATH`")


def in_git_repo(path: Path) -> bool:
    try:
        result = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True
        )
    except OSError:
        return False
    return result.returncode == 0 and result.stdout.strip() == "true"
