"""Domain exceptions. Library code raises these; only the CLI turns them into
short user-facing errors."""

from __future__ import annotations


class MemdError(Exception):
    """Base class for every error memd reports to a user.

    The message says what is wrong in memd's own terms; ``hints`` say what to
    do next in the words of each front door (``cli``: a command to type,
    ``mcp``: a tool to call), so each door speaks to its own reader.
    """

    def __init__(self, *args: object, hints: dict[str, str] | None = None) -> None:
        super().__init__(*args)
        self.hints = hints or {}

    def for_door(self, door: str) -> str:
        hint = self.hints.get(door)
        return f"{self} ({hint})" if hint else str(self)


class VaultError(MemdError):
    """The vault is missing, malformed or cannot be used."""


class VaultNotFound(VaultError):
    pass


class LockTimeout(VaultError):
    pass


class WriteError(VaultError):
    """A file could not be written; the previous content is intact."""


class ConfigError(MemdError):
    pass


class FormatError(MemdError):
    """Text that does not follow the vault format (signature, seq, time)."""


class DocumentError(MemdError):
    """A vault file that cannot be read as a Markdown document."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


class NotFound(MemdError):
    """A document, line range or record that does not exist."""


class GitError(MemdError):
    """Git is missing or refused; callers turn this into a warning, never a lost change."""


class GitTimeout(GitError):
    """A git command gave no answer within its time limit (it was stopped)."""
