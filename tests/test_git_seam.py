"""Every git process memd starts goes through ``memd.git.command``: a missing git is
a one-line error naming the command, and file names that are not ASCII come
back from git exactly as they went in."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from memd.app.init import init_vault
from memd.core.errors import GitError
from memd.git import command as gitcli
from memd.git.log import changed_paths, commit_as_memd
from memd.review.repo import Repo
from memd.sync.gitops import Remote, RemoteUnreachable, fetch, read_blobs, tree_files
from memd.vault.vault import Vault

from .conftest import Memd

NAME = "Café – naïve 日本語 notes.md"


@pytest.fixture
def no_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.mark.usefixtures("no_git")
def test_a_missing_git_is_one_line_naming_the_command(tmp_path: Path) -> None:
    with pytest.raises(GitError) as raised:
        gitcli.run(tmp_path, "status", "--porcelain")
    message = str(raised.value)
    assert message == "could not run `git status`: git is not installed (no `git` on PATH)"


def test_a_missing_git_reaches_the_person_as_one_line(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    memd = Memd(vault)
    memd("add", "Prefers tea in the afternoon")
    monkeypatch.setenv("PATH", str(vault.root / "inbox"))  # a folder with no git in it
    result = memd("log", ok=False)
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    (line,) = result.output.strip().splitlines()
    assert "could not run `git " in line and "git is not installed" in line


def test_without_git_a_vault_is_still_made_and_the_history_says_why(tmp_path: Path, no_git: None) -> None:
    made = init_vault(tmp_path / "vault")
    assert not made.git_initialised
    assert (tmp_path / "vault" / "CURRENT.md").is_file()
    sha, why = commit_as_memd(made.vault, "edit: nothing", ["CURRENT.md"])
    assert sha is None and why is not None and "git is not installed" in why


def test_a_failed_command_is_one_line_with_gits_reason(vault: Vault) -> None:
    with pytest.raises(GitError) as raised:
        gitcli.check(gitcli.run(vault.root, "rev-parse", "--verify", "no-such-branch"), "rev-parse")
    assert str(raised.value) == "git rev-parse failed: fatal: Needed a single revision"


def test_a_remote_that_never_answers_is_stopped_at_the_time_limit(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    silent = tmp_path / "silent-ssh"
    silent.write_text("#!/bin/sh\nexec sleep 120\n")
    silent.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(silent))  # a person's own ssh command is kept
    gitcli.run_git(vault, "remote", "add", "origin", "ssh://nowhere.invalid/vault.git")
    started = time.monotonic()
    with pytest.raises(RemoteUnreachable, match=r"^git fetch gave no answer in 0.5s; is the remote reachable\?$"):
        fetch(vault, Remote("origin", "main"), timeout=0.5)
    # git was stopped, not waited for: a hang guard far above the 0.5 s limit (60x), far below the 120 s sleep
    assert time.monotonic() - started < 30


def test_git_never_reads_memds_own_input(vault: Vault) -> None:
    # memd's standard input may be the MCP server's JSON-RPC pipe: a git given no input must see none.
    script = "from memd.git import command; print(command.run(None, 'hash-object', '--stdin').stdout.strip())"
    child = subprocess.run(
        [sys.executable, "-c", script], input='{"jsonrpc": "2.0"}\n', capture_output=True, text=True, check=True
    )
    empty = gitcli.run(None, "hash-object", "--stdin", stdin="").stdout.strip()
    assert child.stdout.strip() == empty


def test_a_non_ascii_file_name_round_trips_through_git(tmp_path: Path) -> None:
    outer = tmp_path / "repository"
    outer.mkdir()
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    vault = init_vault(outer / "mémoire 日記").vault  # a vault folder inside a larger repository
    content = "# Café\n\nOrders a flat white at the café near the gare.\n".encode()
    (vault.root / NAME).write_bytes(content)

    assert NAME in changed_paths(vault)
    sha, why = commit_as_memd(vault, f"edit: {NAME}", [NAME])
    assert why is None and sha is not None
    assert NAME not in changed_paths(vault)  # git stored the very name memd sees on disk

    repo = Repo.open(vault)
    assert repo.prefix == "mémoire 日記/"
    (commit, files), *_ = repo.changes("-1")
    assert commit.sha == sha and ("A", NAME) in files
    assert repo.read([f"HEAD:{NAME}", "HEAD:missing file.md"]) == {
        f"HEAD:{NAME}": content,
        "HEAD:missing file.md": None,
    }

    mode, blob = tree_files(vault, sha)[f"mémoire 日記/{NAME}"]
    assert mode == "100644" and read_blobs(vault, [blob]) == {blob: content}


def test_cat_file_answers_every_name_in_order_even_missing_ones(vault: Vault) -> None:
    head = gitcli.run_git(vault, "rev-parse", "HEAD").stdout.strip()
    objects = gitcli.cat_file(vault.root, ["HEAD:CURRENT.md", "HEAD:no such file 12", head, "HEAD:.memd"])
    current, missing, commit, tree = objects
    assert current is not None and current.kind == "blob"
    assert current.data == (vault.root / "CURRENT.md").read_bytes()
    assert missing is None
    assert commit is not None and commit.kind == "commit"
    assert tree is not None and tree.kind == "tree"
