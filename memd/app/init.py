"""Creating a vault: the layout, the first files, git, and memd's first commit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memd.core.atomic import atomic_write
from memd.core.config import CONFIG_TEMPLATE
from memd.core.errors import GitError, VaultError, WriteError
from memd.git import command as gitcli
from memd.git.log import commit_as_memd, vault_specs
from memd.vault.state import State, write_state
from memd.vault.vault import CURRENT_TEMPLATE, GITIGNORE_TEMPLATE, Vault, in_git_repo, missing_ignores


@dataclass(frozen=True)
class InitResult:
    vault: Vault
    created: tuple[str, ...]
    git_initialised: bool
    ignores_added: tuple[str, ...] = ()  # patterns appended to an existing .gitignore


def init_vault(path: Path) -> InitResult:
    """Create the layout (idempotent: existing files are kept; an existing
    ``.gitignore`` only gains the patterns of memd's that it lacks)."""
    if path.exists() and not path.is_dir():
        raise VaultError(f"{path} is a file, not a vault folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        vault = Vault(path.resolve())
        created: list[str] = []
        for folder in (vault.topics_dir, vault.sources_dir, vault.inbox_dir, vault.meta_dir):
            if not folder.is_dir():
                folder.mkdir(parents=True)
                created.append(vault.rel(folder) + "/")
        # Empty folders vanish from git; a .gitkeep keeps the layout in clones.
        for folder in (vault.topics_dir, vault.sources_dir, vault.inbox_dir):
            if not any(folder.iterdir()):
                (folder / ".gitkeep").touch()
    except OSError as err:
        raise VaultError(f"cannot create a vault at {path}: {err.strerror}") from None
    files = {
        vault.current: CURRENT_TEMPLATE,
        vault.config_path: CONFIG_TEMPLATE,
        vault.root / ".gitignore": GITIGNORE_TEMPLATE,
    }
    for file, text in files.items():
        if not file.exists():
            atomic_write(file, text)
            created.append(vault.rel(file))
    ignores_added = _add_missing_ignores(vault)
    if not vault.state_path.exists():
        write_state(vault, State())
        created.append(vault.rel(vault.state_path))
    git_initialised = False
    if not in_git_repo(vault.root):
        try:
            git_initialised = gitcli.run(None, "init", "-q", str(vault.root)).returncode == 0
        except GitError:
            git_initialised = False  # git is optional for the files; consolidation says so when it cannot commit
    # memd's own first commit, so later edits stand out: in a repository of its own, or, in a
    # larger one (which memd commits to, ``[git] repository``), of the files it just created
    # (else the next commit took memd's buffer for a hand edit and left the rest untracked).
    if git_initialised:
        commit_as_memd(vault, "init: memd vault", vault_specs(vault))
    elif created and in_git_repo(vault.root):
        made = {rel.rstrip("/") for rel in created}
        commit_as_memd(vault, "init: memd vault", [rel for rel in vault_specs(vault) if rel in made])
    return InitResult(vault, tuple(created), git_initialised, ignores_added)


def _add_missing_ignores(vault: Vault) -> tuple[str, ...]:
    """Append memd's ignore patterns that the vault's ``.gitignore`` lacks, after
    the person's own lines, which stay byte for byte (line endings included; a
    symlinked file is written through its link). Best effort: a file memd may
    not change is left as it is (``memd status`` keeps naming what it lacks)."""
    path = vault.root / ".gitignore"
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):  # absent, unreadable or not UTF-8: not memd's to rewrite
        return ()
    missing = missing_ignores(text)
    if not missing:
        return ()
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = ["# memd: what newer versions of memd ignore (added by `memd init`)", *missing]
    lead = "" if not text or text.endswith("\n") else newline
    try:
        atomic_write(path.resolve(), data + (lead + newline.join(lines) + newline).encode("utf-8"))
    except (WriteError, OSError):
        return ()
    return tuple(missing)
