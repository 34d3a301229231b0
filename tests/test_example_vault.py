"""The example vault ships inside memd's own checkout: trying it never writes
into that checkout's history (``[git] repository = "own"``), and ``memd init``
keeps Obsidian's per-window files out of a vault's git."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from memd.cli import main
from memd.vault.vault import Vault

from .conftest import REPO, copy_example


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the checkout's example vault and README, committed as a repository of its own."""
    root = tmp_path / "memd"
    root.mkdir()
    copy_example(root / "vault")
    shutil.copy(REPO / "README.md", root / "README.md")
    shutil.copy(REPO / ".gitignore", root / ".gitignore")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the checkout")
    return root


def readme_first_command() -> list[list[str]]:
    """The memd commands of the README's first command line (after `pip install -e .`)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines() if line.startswith("pip install -e . && memd"))
    return [shlex.split(part)[1:] for part in line.split("&&")[1:]]


def test_trying_the_example_vault_leaves_the_checkout_as_it_was(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(checkout)
    # The checkout's remote, not the vault's: status must not show it as the vault's.
    git(checkout, "remote", "add", "origin", str(checkout.parent / "memd-upstream.git"))
    log, status = git(checkout, "log", "--format=%H %s"), git(checkout, "status", "--porcelain")
    runner = CliRunner()
    commands = readme_first_command()
    assert commands[0] == ["--vault", "vault", "status"]
    for args in commands:
        result = runner.invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
        if args == commands[0]:
            assert "origin" not in result.output  # status names no remote the vault does not sync with
    assert "Atlas cut-over moved to 2026-12-08" in result.output  # the question was answered

    refused = runner.invoke(main, ["--vault", "vault", "consolidate"])
    assert refused.exit_code == 1 and len(refused.output.strip().splitlines()) == 1
    assert 'repository = "own"' in refused.output and "copy the vault out" in refused.output
    assert runner.invoke(main, ["--vault", "vault", "forget", "3"]).exit_code == 1
    assert git(checkout, "log", "--format=%H %s") == log
    assert git(checkout, "status", "--porcelain") == status


def test_the_example_vault_commits_once_it_has_a_repository_of_its_own(tmp_path: Path) -> None:
    copy = tmp_path / "memory"
    copy_example(copy)
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "commit", "-qm", "the example")
    runner = CliRunner()
    assert runner.invoke(main, ["--vault", str(copy), "add", "Dana takes her coffee with oat milk"]).exit_code == 0
    result = runner.invoke(main, ["--vault", str(copy), "consolidate"])
    assert result.exit_code == 0 and "committed" in result.output, result.output
    assert git(copy, "log", "-1", "--format=%s").startswith("consolidate:")


def test_a_vault_inside_a_larger_repository_still_commits_there_by_default(tmp_path: Path) -> None:
    outer = tmp_path / "notes"
    outer.mkdir()
    git(outer, "init", "-q")
    (outer / "draft.txt").write_text("the person's own work, staged\n")
    git(outer, "add", "draft.txt")
    runner = CliRunner()
    assert runner.invoke(main, ["init", str(outer / "memory")]).exit_code == 0
    # memd's first commit holds the files it made, as in a repository of its own, and
    # nothing else: what the person staged stays staged.
    assert git(outer, "log", "-1", "--format=%s").strip() == "init: memd vault"
    assert git(outer, "status", "--porcelain").splitlines() == ["A  draft.txt"]
    assert runner.invoke(main, ["--vault", str(outer / "memory"), "add", "Allergic to peanuts"]).exit_code == 0
    assert runner.invoke(main, ["--vault", str(outer / "memory"), "consolidate"]).exit_code == 0
    assert git(outer, "log", "-1", "--format=%s").startswith("consolidate:")
    history = runner.invoke(main, ["--vault", str(outer / "memory"), "history", "1"]).output
    assert "written to the buffer" in history and "by hand" not in history


def test_init_keeps_obsidian_workspace_and_cache_out_of_git(vault: Vault) -> None:
    obsidian = vault.root / ".obsidian"
    obsidian.mkdir()
    for name in ("workspace.json", "workspace-mobile.json", "app.json"):
        (obsidian / name).write_text("{}\n")
    (obsidian / "cache").write_text("x")
    untracked = git(vault.root, "status", "--porcelain", "--untracked-files=all")
    assert ".obsidian/app.json" in untracked  # settings a person may want on every device
    assert "workspace" not in untracked and ".obsidian/cache" not in untracked
