"""The CLI spine as a user meets it: init, add, show, status, lint."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from memd.cli import main
from memd.vault.vault import Vault

from .conftest import REPO, Memd


def test_init_creates_the_layout_and_a_git_repository(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", str(tmp_path / "mem"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["git_init"] is True
    root = tmp_path / "mem"
    for name in ("CURRENT.md", "topics", "sources", "inbox", ".memd/config.toml", ".memd/state.json", ".gitignore"):
        assert (root / name).exists(), name
    assert (root / ".git").is_dir()
    assert ".memd/index/" in (root / ".gitignore").read_text()


def test_init_without_a_path_creates_the_vault_that_vault_names(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(main, ["--vault", str(tmp_path / "named"), "init"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "named" / ".memd" / "config.toml").is_file()
    result = runner.invoke(main, ["init"], env={"MEMD_VAULT": str(tmp_path / "from-env")})
    assert result.exit_code == 0, result.output
    assert (tmp_path / "from-env" / ".memd").is_dir()
    assert not (tmp_path / ".memd").exists() and not (tmp_path / "CURRENT.md").exists()


def test_init_is_idempotent_and_never_overwrites(tmp_path: Path) -> None:
    runner = CliRunner()
    runner.invoke(main, ["init", str(tmp_path)])
    (tmp_path / "CURRENT.md").write_text("# mine\n")
    result = runner.invoke(main, ["init", str(tmp_path)])
    assert result.exit_code == 0
    assert "already a memd vault" in result.output
    assert (tmp_path / "CURRENT.md").read_text() == "# mine\n"


def test_init_on_an_older_vault_adds_only_the_ignore_patterns_it_lacks(tmp_path: Path) -> None:
    runner = CliRunner()
    runner.invoke(main, ["init", str(tmp_path)])
    # What an older memd wrote, with a line of the person's own after it.
    older = ".memd/index/\n.memd/lock\ninbox/\n# mine\n*.bak"
    (tmp_path / ".gitignore").write_text(older)
    status = runner.invoke(main, ["--vault", str(tmp_path), "status"])
    assert "hint: .gitignore does not ignore .memd/journal/" in status.output
    assert (
        ".memd/seq.local"
        in json.loads(runner.invoke(main, ["--vault", str(tmp_path), "status", "--json"]).output)["gitignore_missing"]
    )

    report = json.loads(runner.invoke(main, ["init", str(tmp_path), "--json"]).output)
    assert ".memd/seq.local" in report["ignores_added"] and ".memd/lock" not in report["ignores_added"]
    text = (tmp_path / ".gitignore").read_text()
    assert text.startswith(older + "\n")  # the person's lines stay as they were
    (tmp_path / ".memd" / "seq.local").write_text("7\n")
    untracked = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"], capture_output=True, text=True
    ).stdout
    assert ".memd/seq.local" not in untracked
    again = runner.invoke(main, ["init", str(tmp_path)])
    assert "already a memd vault; nothing changed" in again.output
    assert (tmp_path / ".gitignore").read_text() == text
    assert "gitignore" not in runner.invoke(main, ["--vault", str(tmp_path), "status"]).output


def test_init_keeps_a_gitignore_it_may_not_change_and_the_way_it_is_written(tmp_path: Path) -> None:
    runner = CliRunner()
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / ".gitignore").write_text("*.swp\n")
    (locked / ".gitignore").chmod(0o444)
    result = runner.invoke(main, ["init", str(locked), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["ignores_added"] == [] and (locked / ".memd" / "state.json").exists()
    assert (locked / ".gitignore").read_text() == "*.swp\n"

    crlf = tmp_path / "crlf"
    crlf.mkdir()
    (crlf / ".gitignore").write_bytes(b"*.swp\r\n")
    runner.invoke(main, ["init", str(crlf)])
    data = (crlf / ".gitignore").read_bytes()
    assert data.startswith(b"*.swp\r\n") and b".memd/seq.local\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")

    linked = tmp_path / "linked"
    linked.mkdir()
    shared = tmp_path / "shared-ignore"
    shared.write_text("/.memd/\n")  # all of .memd/ is ignored already
    (linked / ".gitignore").symlink_to(shared)
    runner.invoke(main, ["init", str(linked)])
    assert (linked / ".gitignore").is_symlink()
    header = "# memd: what newer versions of memd ignore (added by `memd init`)"
    assert shared.read_text() == f"/.memd/\n{header}\n*.memd-tmp\ninbox/\n.obsidian/workspace*\n.obsidian/cache\n"


def test_init_inside_an_existing_repository_does_not_nest_git(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = CliRunner().invoke(main, ["init", str(tmp_path / "notes" / "memory"), "--json"])
    assert json.loads(result.output)["git_init"] is False
    assert not (tmp_path / "notes" / "memory" / ".git").exists()


def test_a_vault_path_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_text("x")
    for args in (["init", str(target)], ["--vault", str(target), "status"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1
        assert "is a file, not a vault folder" in result.output
        assert "Traceback" not in result.output


def test_vault_is_found_from_flag_env_then_parent_folders(vault: Vault, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    runner = CliRunner()
    assert runner.invoke(main, ["--vault", str(vault.root), "status"]).exit_code == 0
    monkeypatch.setenv("MEMD_VAULT", str(vault.root))
    assert runner.invoke(main, ["status", "--json"]).exit_code == 0
    monkeypatch.delenv("MEMD_VAULT")
    monkeypatch.chdir(vault.topics_dir)
    found = json.loads(runner.invoke(main, ["status", "--json"]).output)
    assert found["vault"] == str(vault.root)
    monkeypatch.chdir(tmp_path)
    missing = runner.invoke(main, ["status"])
    assert missing.exit_code == 1
    assert "no memd vault here" in missing.output


def test_add_appends_signed_entries_with_fresh_seqs(memd: Memd) -> None:
    before = memd.vault.current.read_text()
    memd("add", "Takes coffee with oat milk")
    out = memd(
        "add",
        "--time",
        "2026-11-20T09:12",
        "--source",
        "ai",
        "--src",
        "sources/a.md#L3",
        "--meta",
        "mood=calm,rested",
        "--json",
        "Allergic to peanuts",
    )
    [added] = json.loads(out.output)
    assert added["seq"] == 2
    assert added["signature"] == "<seq=2,time=2026-11-20T09:12,source=ai,src=sources/a.md#L3,mood=calm%2Crested>"
    after = memd.vault.current.read_text()
    assert after.startswith(before)  # earlier lines are never rewritten
    # The src also opens as a Markdown link (Obsidian, GitHub).
    line = f"- {added['signature']} Allergic to peanuts [source](sources/a.md#L3)"
    assert after.splitlines()[added["line"] - 1] == line


def test_add_reads_stdin_one_entry_per_line_or_whole_with_one(memd: Memd) -> None:
    lines = json.loads(memd("add", "--json", input="first\n\n  second  \n").output)
    assert [a["text"] for a in lines] == ["first", "second"]
    [whole] = json.loads(memd("add", "--one", "--json", input="para one\npara two\n").output)
    shown = json.loads(memd("show", "--json").output)["entries"]
    assert shown[-1]["seq"] == str(whole["seq"])
    assert shown[-1]["text"] == "para one\npara two"


def test_add_rejects_bad_input_without_touching_the_buffer(memd: Memd) -> None:
    before = memd.vault.current.read_bytes()
    for args, message in [
        (["add", "--time", "yesterday", "x"], "invalid time"),
        (["add", "--meta", "novalue", "x"], "KEY=VALUE"),
        (["add", "--meta", "seq=5", "x"], "seq is assigned by memd"),
        (["add", "   "], "nothing to add"),
    ]:
        result = memd(*args, ok=False)
        assert result.exit_code != 0
        assert message in result.output
        assert "Traceback" not in result.output
    assert memd.vault.current.read_bytes() == before


def test_show_prints_current_or_a_topic_by_id_or_path(memd: Memd) -> None:
    topic = memd.vault.topics_dir / "coffee.md"
    topic.write_text('---\nid: "coffee"\nsummary: "coffee"\n---\n# Coffee\n- <seq=1,source=user> Oat milk\n')
    assert memd("show", "coffee").output == topic.read_text()
    assert memd("show", "topics/coffee.md").output == topic.read_text()
    data = json.loads(memd("show", "coffee", "--json").output)
    assert data["frontmatter"] == {"id": "coffee", "summary": "coffee"}
    assert data["entries"][0] | {} == {
        "line": 6,
        "end_line": 6,
        "headings": ["Coffee"],
        "seq": "1",
        "seqs": [1],
        "time": None,
        "source": "user",
        "src": None,
        "meta": {},
        "text": "Oat milk",
    }
    missing = memd("show", "tea", ok=False)
    assert missing.exit_code == 1 and "no document 'tea'" in missing.output


def test_show_refuses_to_escape_the_vault(memd: Memd, tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("x")
    assert memd("show", "../secret.md", ok=False).exit_code == 1


def test_status_reports_buffer_against_thresholds(memd: Memd) -> None:
    memd.vault.config_path.write_text('[consolidate]\nbuffer_tokens = 5\nbuffer_age = "2h"\n')
    memd("add", "one two three")
    status = json.loads(memd("status", "--json").output)
    assert status["buffer"].items() >= {"entries": 1, "tokens": 3, "token_threshold": 5, "due": None}.items()
    assert status["buffer"]["age_threshold_seconds"] == 7200
    memd("add", "four five six")
    status = json.loads(memd("status", "--json").output)
    assert status["buffer"]["due"] == "tokens"
    assert status["next_seq"] == 3
    assert "buffer      2 entries, 6/5 tokens" in memd("status").output


def test_status_says_the_seq_the_next_add_gets_past_a_topic_written_by_hand(memd: Memd) -> None:
    (memd.vault.topics_dir / "old.md").write_text(
        "---\nid: old\n---\n# Old\n- <seq=100,time=2026-11-01,source=user> An old entry\n"
    )
    assert json.loads(memd("status", "--json").output)["next_seq"] == 101
    assert "next seq    101" in memd("status").output
    assert json.loads(memd("add", "--json", "A new entry").output)[0]["seq"] == 101
    assert json.loads(memd("status", "--json").output)["next_seq"] == 102


def test_invalid_config_is_a_clear_error(memd: Memd) -> None:
    memd.vault.config_path.write_text("[consolidate]\nbuffer_tokens = -1\n")
    result = memd("status", ok=False)
    assert result.exit_code == 1 and "buffer_tokens must be a positive integer" in result.output


def test_example_vault_in_the_repo_is_lint_clean() -> None:
    result = CliRunner().invoke(main, ["lint", str(REPO / "vault")])
    assert result.exit_code == 0, result.output


def test_lint_reports_each_problem_as_path_line_message(memd: Memd) -> None:
    topics = memd.vault.topics_dir
    (topics / "bad-yaml.md").write_text("---\nid: x\nsummary: [unclosed\n---\n# T\n")
    (topics / "dup-key.md").write_text("---\nid: dup-key\nid: again\n---\n")
    (topics / "seqs.md").write_text(
        '---\nid: "seqs"\n---\n# S\n- <seq=abc> bad\n- <seq=1,time=soon> when\n- <seq=2> a\n- <seq=2> b\n'
    )
    (topics / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    (topics / "binary.md").write_bytes(b"\x89PNG\x00\x00")
    (topics / "empty.md").write_text("")
    result = memd("lint", ok=False)
    assert result.exit_code == 1
    lines = set(result.output.splitlines())
    expected = {
        "topics/bad-yaml.md:3: invalid YAML frontmatter: expected ',' or ']', but got '<stream end>'",
        "topics/dup-key.md:3: duplicate key 'id'",
        "topics/seqs.md:5: malformed signature: invalid seq 'abc' (expected e.g. 12, 41-43 or 12+41-43)",
        "topics/seqs.md:6: invalid time 'soon' (expected ISO 8601, e.g. 2026-11-20T09:12Z)",
        "topics/seqs.md:8: duplicate seq 2 (also at topics/seqs.md:7)",
        "topics/latin1.md:1: not valid UTF-8 (byte 0xe9 at offset 3)",
        "topics/binary.md:1: binary file where a Markdown file is expected",
        "topics/empty.md:1: empty file where a topic document is expected",
    }
    assert expected <= lines, result.output
    report = json.loads(memd("lint", "--json", ok=False).output)
    assert report["ok"] is False and report["errors"] >= len(expected)


def test_lint_names_what_stands_where_the_buffer_should_and_no_link_in_nested_brackets(memd: Memd) -> None:
    memd.vault.current.unlink()
    os.mkfifo(memd.vault.current)
    (memd.vault.topics_dir / "deep.md").write_text("---\nid: deep\nx: " + "[" * 80 + "]" * 80 + "\n---\n# Deep\n")
    lines = memd("lint", ok=False).output.splitlines()
    assert "CURRENT.md:1: is not a regular file (a pipe or a device?), expected a Markdown file: " in "\n".join(lines)
    assert not [line for line in lines if "links to no document" in line]


def test_lint_of_single_files_and_warnings_only_exit_zero(memd: Memd) -> None:
    topic = memd.vault.topics_dir / "handmade.md"
    topic.write_text("# Handmade\n- an unsigned note\n")
    result = memd("lint", str(topic))
    assert "topics/handmade.md:1: warning: no frontmatter yet" in result.output

    # A file named that memd never reads is said to be unchecked, not passed as clean.
    (memd.vault.root / ".obsidian").mkdir()
    hidden = memd.vault.root / ".obsidian" / "draft.md"
    hidden.write_text("- <seq=zz> not memory\n")
    result = memd("lint", str(hidden))
    assert ".obsidian/draft.md:1: warning: not memory memd reads" in result.output
    elsewhere = memd.vault.root.parent / "notes.md"
    elsewhere.write_text("- a note outside any vault\n")
    outside = memd("lint", str(elsewhere), ok=False)
    assert outside.output.strip() == f"memd: {elsewhere} is not inside a memd vault (lint checks a vault's files)"


def test_help_carries_examples_and_stays_light() -> None:
    result = CliRunner().invoke(main, ["add", "--help"])
    assert "Examples:" in result.output
    heavy = "('whoosh', 'openai', 'git', 'watchdog')"
    probe = f"import sys, memd.cli.core; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run(["python", "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_command_and_group_shows_an_example() -> None:
    import click

    from memd.cli import main

    def walk(command: click.Command, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], click.Command]]:
        found = [(path, command)]
        if isinstance(command, click.Group):
            context = click.Context(command)
            for name in command.list_commands(context):  # the commands are loaded lazily
                sub = command.get_command(context, name)
                assert sub is not None
                found += walk(sub, (*path, name))
        return found

    commands = walk(main, ())
    missing = [" ".join(path) for path, command in commands if path and "Example" not in (command.help or "")]
    assert len(commands) > 30 and not missing, f"--help without an example: {missing}"


def test_the_cli_as_people_type_it(memd: Memd) -> None:
    vault = str(memd.vault.root)
    runner = memd.runner
    from memd.cli import main

    typo = runner.invoke(main, ["statsu"])
    assert typo.exit_code == 1 and "Did you mean `memd stats` or `memd status`?" in typo.output
    after = runner.invoke(main, ["status", "--vault", vault, "--json"])  # --vault after the subcommand
    assert after.exit_code == 0 and json.loads(after.output)["vault"] == vault
    negative = memd("config", "set", "consolidate.buffer_tokens", "-5", ok=False)
    assert "must be a positive integer, got -5" in negative.output
    assert "seq is assigned by memd" in memd("add", "--meta", "seq=5", "x", ok=False).output


def test_json_mode_errors_are_json_objects(memd: Memd) -> None:
    result = memd("show", "nowhere", "--json", ok=False)
    assert result.exit_code == 1
    error = json.loads(result.output.strip().splitlines()[-1])
    assert error == {"error": error["error"], "kind": "NotFound", "code": 1} and "nowhere" in error["error"]


def test_the_settings_guide_shows_the_config_file_memd_init_writes(vault: Vault) -> None:
    guide = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    written = vault.config_path.read_text(encoding="utf-8")
    assert f"```toml\n{written.rstrip()}\n```" in guide


def test_the_readme_python_example_runs(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    example = readme.split("### Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    from memd import Memory

    Memory.init(tmp_path / "memory")
    code = example.replace('"~/memory"', repr(str(tmp_path / "memory")))
    exec(compile(code, "README.md", "exec"), {})
    assert "oat milk" in (tmp_path / "memory" / "CURRENT.md").read_text()
