"""Every git process memd starts: one executable, one environment, one error.

memd drives git through its command line, and every command goes through
here, so each one runs the same way whatever the person's configuration or
language: no pager and no terminal prompt (a question for a password would
hang the daemon), paths printed as they are (``core.quotepath=false``) and
messages in English (``LC_ALL=C``), because some are read (a rejected push, a
remote without the branch). Text is UTF-8 both ways; bytes that are not
survive as surrogates, as file names do in Python. No git reads memd's own
standard input (the MCP server speaks JSON-RPC there).

A git that cannot start is a ``GitError`` naming the command; ``check`` makes
a failed command one too, where the caller expects success. Network commands
never ask for a password and stop at their time limit (``GitTimeout``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from memd.core.errors import GitError, GitTimeout

if TYPE_CHECKING:
    from memd.vault.vault import Vault

GIT = "git"
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"}
_OPTIONS = ("-c", "core.quotepath=false")
# ssh must fail rather than ask (for a password, or about an unknown host key).
_SSH = "ssh -o BatchMode=yes -o ConnectTimeout=20"

Output = TypeVar("Output", str, bytes)


def run_bytes(
    root: Path | str | None,
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float | None = None,
    network: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git -C root ARGS`` (no ``-C`` when ``root`` is None) and return
    what it printed, as bytes. ``env`` is added to memd's environment for git;
    ``network`` makes ssh fail rather than ask; past ``timeout`` seconds the
    command is stopped and ``GitTimeout`` raised."""
    where = ["-C", str(root)] if root is not None else []
    argv = [GIT, *where, *_OPTIONS, *args]
    environment = _environment(env, network)
    try:
        if stdin is None:
            return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=environment)
        return subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout, env=environment)
    except subprocess.TimeoutExpired:
        raise GitTimeout(f"git {args[0]} gave no answer in {timeout:g}s") from None
    except FileNotFoundError:
        raise GitError(f"could not run `git {args[0]}`: git is not installed (no `git` on PATH)") from None
    except OSError as err:
        raise GitError(f"could not run `git {args[0]}`: {err.strerror}") from None


def run(
    root: Path | str | None,
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float | None = None,
    network: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``run_bytes`` for text: ``stdin`` and the output are UTF-8."""
    data = None if stdin is None else _encode(stdin)
    done = run_bytes(root, *args, env=env, stdin=data, timeout=timeout, network=network)
    return subprocess.CompletedProcess(done.args, done.returncode, decode(done.stdout), decode(done.stderr))


def run_git(
    vault: Vault,
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float | None = None,
    network: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``run`` in the vault's folder."""
    return run(vault.root, *args, env=env, stdin=stdin, timeout=timeout, network=network)


def head(vault: Vault) -> str | None:
    """The commit HEAD names (None in a repository with no commit yet)."""
    return run_git(vault, "rev-parse", "--verify", "-q", "HEAD").stdout.strip() or None


def is_ancestor(vault: Vault, older: str, newer: str) -> bool:
    return run_git(vault, "merge-base", "--is-ancestor", older, newer).returncode == 0


def check(result: subprocess.CompletedProcess[Output], what: str) -> subprocess.CompletedProcess[Output]:
    """``result`` when git succeeded; otherwise a one-line ``GitError`` saying
    which command failed and git's reason."""
    if result.returncode != 0:
        message = _text(result.stderr).strip() or _text(result.stdout).strip()
        raise GitError(f"git {what} failed: {last_line(message)}")
    return result


def last_line(message: str) -> str:
    """The line of git's output that says what went wrong."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    interesting = [line for line in lines if line.lower().startswith(("fatal:", "error:", "remote:"))]
    return (interesting or lines or ["no reason given"])[-1]


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return decode(output)
    return output or ""


def _environment(env: Mapping[str, str] | None, network: bool) -> dict[str, str]:
    fixed = dict(_ENV)
    if network and not os.environ.get("GIT_SSH_COMMAND") and not os.environ.get("GIT_SSH"):
        fixed["GIT_SSH_COMMAND"] = _SSH
    return {**os.environ, **fixed, **(env or {})}


# -- objects ----------------------------------------------------------------------


@dataclass(frozen=True)
class GitObject:
    kind: str  # blob, tree, commit or tag
    data: bytes


def cat_file(root: Path | str, names: Sequence[str]) -> list[GitObject | None]:
    """Objects named like ``<sha>`` or ``<rev>:<path>``, in order, all through
    one ``git cat-file --batch`` process (None where there is no such object)."""
    if not names:
        return []
    if any("\n" in name for name in names):
        raise GitError("a name with a line break cannot be read from git")
    request = _encode("".join(f"{name}\n" for name in names))
    out = check(run_bytes(root, "cat-file", "--batch", stdin=request), "cat-file").stdout
    found: list[GitObject | None] = []
    at = 0
    for name in names:
        end = out.find(b"\n", at)
        if end < 0:
            raise GitError(f"git cat-file stopped before {name}")
        header = out[at:end].split(b" ")
        at = end + 1
        # Found: "<sha> <kind> <size>"; otherwise "<name> missing" (or "ambiguous"),
        # whose last word is never a number, whatever spaces the name holds.
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            found.append(GitObject(header[1].decode("ascii"), out[at : at + size]))
            at += size + 1
        else:
            found.append(None)
    return found
