"""Hooks: Claude Code capture into the inbox, the git pre-commit lint, and
installers that can run twice without doing anything twice."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from memd.app.hooks import AGENTS_SNIPPET, claude_settings_snippet, mcp_config, render_pre_commit
from memd.app.init import init_vault
from memd.vault.vault import Vault

from .conftest import REPO, Memd

SESSION = "0f3c9a2e-7b1d-4c55-9e0a-2d1f6b8c4a10"


def transcript(tmp_path: Path, lines: int = 2) -> Path:
    path = tmp_path / "projects" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [
        {"type": "user", "sessionId": SESSION, "message": {"role": "user", "content": f"I prefer green tea ({n})"}}
        for n in range(lines)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def hook_input(path: Path, event: str = "SessionEnd") -> str:
    payload = {"session_id": SESSION, "transcript_path": str(path), "cwd": "/work", "hook_event_name": event}
    return json.dumps({**payload, "reason": "exit"})


def installed_commands(settings: Path, event: str) -> list[str]:
    data = json.loads(settings.read_text())
    return [h["command"] for group in data["hooks"].get(event, []) for h in group["hooks"]]


def run_hook(command: str, stdin: str) -> subprocess.CompletedProcess[str]:
    """Run a hook command the way Claude Code does: through the shell, JSON on stdin."""
    return subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, text=True, timeout=60)


def test_installed_claude_hook_puts_the_finished_session_in_the_inbox(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    result = memd("hooks", "install", "claude")
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    assert f"created {settings}" in result.output and "+ hooks.SessionEnd:" in result.output
    [command] = installed_commands(settings, "SessionEnd")

    source = transcript(tmp_path)
    done = run_hook(command, hook_input(source))
    assert done.returncode == 0, done.stderr
    captured = vault.inbox_dir / f"claude-{SESSION}.jsonl"
    assert captured.read_bytes() == source.read_bytes()
    assert sorted(p.name for p in vault.inbox_dir.iterdir()) == [".gitkeep", captured.name]

    # The session goes on and ends again: the same file, now complete.
    source = transcript(tmp_path, lines=5)
    assert run_hook(command, hook_input(source, "Stop")).returncode == 0
    assert captured.read_bytes() == source.read_bytes()
    assert len(list(vault.inbox_dir.glob("claude-*"))) == 1


def test_capture_never_fails_the_agent_session(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    for stdin in ["not json", "[]", json.dumps({"session_id": SESSION}), hook_input(tmp_path / "missing.jsonl")]:
        result = memd("hook", "claude-capture", input=stdin)
        assert result.exit_code == 0
        assert "could not capture" in result.output
    assert not list(vault.inbox_dir.glob("claude-*"))


def test_a_hostile_session_id_cannot_leave_the_inbox(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    source = transcript(tmp_path)
    memd("hook", "claude-capture", input=json.dumps({"session_id": "../../x/../y", "transcript_path": str(source)}))
    [captured] = vault.inbox_dir.glob("claude-*")
    assert captured.parent == vault.inbox_dir and captured.name == "claude-x-y.jsonl"


def test_install_claude_keeps_other_settings_and_is_idempotent(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    project = tmp_path / "app"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    theirs = {
        "model": "opus",
        "hooks": {
            "SessionEnd": [{"hooks": [{"type": "command", "command": "echo bye"}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh"}]}],
        },
    }
    settings.write_text(json.dumps(theirs, indent=2))
    memd("hooks", "install", "claude", "--project", str(project), "--on", "session-end", "--on", "stop")
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["hooks"]["PreToolUse"] == theirs["hooks"]["PreToolUse"]
    assert installed_commands(settings, "SessionEnd")[0] == "echo bye"
    assert len(installed_commands(settings, "SessionEnd")) == 2 and len(installed_commands(settings, "Stop")) == 1

    before = settings.read_bytes()
    again = memd("hooks", "install", "claude", "--project", str(project), "--on", "session-end", "--on", "stop")
    assert "already up to date" in again.output and settings.read_bytes() == before

    # Pointing at another vault updates memd's hook in place instead of adding a second one.
    other = init_vault(tmp_path / "other").vault
    moved = Memd(other)("hooks", "install", "claude", "--project", str(project))
    assert "~ hooks.SessionEnd:" in moved.output
    commands = installed_commands(settings, "SessionEnd")
    assert len(commands) == 2 and str(other.root) in commands[1]


def test_install_claude_dry_run_and_broken_settings_change_nothing(memd: Memd, tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    result = memd("hooks", "install", "claude", "--settings", str(settings), "--dry-run")
    assert "would have created" in result.output and not settings.exists()
    settings.write_text("{ not json")
    failed = memd("hooks", "install", "claude", "--settings", str(settings), ok=False)
    assert failed.exit_code == 1 and "not readable JSON" in failed.output
    assert settings.read_text() == "{ not json"


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60)


def test_pre_commit_blocks_broken_vault_files_only(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    vault = init_vault(repo / "notes").vault  # a vault inside a larger repository
    memd = Memd(vault)
    assert "under notes/" in memd("hooks", "install", "git").output
    assert "already up to date" in memd("hooks", "install", "git").output

    (repo / "README.md").write_text("# project\n- <seq=oops> not a vault file, not linted\n")
    memd("add", "Prefers green tea")
    git(repo, "add", "-A")
    assert git(repo, "commit", "-qm", "good").returncode == 0

    (vault.topics_dir / "tea.md").write_text("---\nid: tea\n---\n# Tea\n- <seq=zz> broken signature\n")
    git(repo, "add", "-A")
    blocked = git(repo, "commit", "-qm", "bad")
    assert blocked.returncode == 1
    assert "topics/tea.md:5: malformed signature" in blocked.stderr
    assert "--no-verify" in blocked.stderr

    # Every Markdown file of the vault is memory, a note in a folder of the person's own too;
    # what memd never reads (a hidden folder) is not checked and stops nothing.
    (vault.topics_dir / "tea.md").unlink()
    (vault.root / ".obsidian").mkdir()
    (vault.root / ".obsidian" / "scratch.md").write_text("- <seq=zz> not memory\n")
    git(repo, "add", "-A")
    assert git(repo, "commit", "-qm", "hidden").returncode == 0
    (vault.root / "people").mkdir()
    (vault.root / "people" / "sam.md").write_text("- <seq=9998,time=bad> Sam's birthday\n")
    git(repo, "add", "-A")
    blocked = git(repo, "commit", "-qm", "note")
    assert blocked.returncode == 1
    assert "people/sam.md:1: invalid time 'bad'" in blocked.stderr


def test_an_existing_pre_commit_is_kept_or_chained_never_clobbered(memd: Memd, vault: Vault) -> None:
    hook = vault.root / ".git" / "hooks" / "pre-commit"
    hook.write_text('#!/bin/sh\necho theirs > "$(git rev-parse --show-toplevel)/ran-theirs"\n')
    hook.chmod(0o755)
    refused = memd("hooks", "install", "git", ok=False)
    assert refused.exit_code == 1 and "--chain" in refused.output
    assert "theirs" in hook.read_text()

    chained = memd("hooks", "install", "git", "--chain")
    assert "pre-commit.local" in chained.output
    assert "theirs" in (hook.parent / "pre-commit.local").read_text()
    memd("add", "Walks the dog at seven")
    git(vault.root, "add", "CURRENT.md")
    assert git(vault.root, "commit", "-qm", "entry").returncode == 0
    assert (vault.root / "ran-theirs").exists()


def test_git_install_outside_a_repository_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".memd").mkdir()
    result = Memd(Vault(plain))("hooks", "install", "git", ok=False)
    assert result.exit_code == 1 and "not in a git repository" in result.output


def test_the_files_in_hooks_are_what_the_installers_write() -> None:
    folder = REPO / "hooks"
    assert (folder / "pre-commit").read_text() == render_pre_commit()
    assert os.access(folder / "pre-commit", os.X_OK)
    snippet = claude_settings_snippet("memd --vault ~/memory hook claude-capture")
    assert json.loads((folder / "claude-settings.json").read_text()) == snippet
    assert json.loads((folder / "mcp.json").read_text()) == mcp_config("/home/you/memory", ("memd",))
    assert (folder / "AGENTS.md").read_text() == AGENTS_SNIPPET


def test_the_agent_snippet_says_when_to_ask_and_when_to_add(memd: Memd) -> None:
    shown = memd("hooks", "show", "agents").output
    assert shown == AGENTS_SNIPPET
    assert "memd ask" in shown and "memory_add" in shown and "memory_ask" in shown
    mcp = json.loads(memd("hooks", "show", "mcp").output)["mcpServers"]["memd"]
    assert mcp["args"][-3:] == ["--vault", str(memd.vault.root), "mcp"]
