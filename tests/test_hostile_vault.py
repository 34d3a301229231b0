"""Hostile input memd once acknowledged and then choked on (issue 27): control
bytes, signatures quoted in entry text, unbounded ``supersedes=``, a forged or
misplaced ``.memd/acks.jsonl``, pipes and links where memd keeps its files.
Each case answers with an exit code and at most one line, never a traceback or
a hang, and leaves a vault where ``add``, ``consolidate`` and ``verify`` work."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from memd.app import Memory
from memd.mcp.server import build_server
from memd.vault.state import read_state
from memd.vault.vault import Vault

from .conftest import Memd
from .hostile import REPO, assert_clean, run_memd


def keeps_working(memd: Memd, word: str = "afterwards") -> None:
    """The vault is not stuck: a new entry is taken, filed and accounted for."""
    added = memd("add", f"a fact added {word}", ok=False)
    assert added.exit_code == 0, added.output
    consolidated = memd("consolidate", ok=False)
    assert consolidated.exit_code == 0, consolidated.output
    verified = memd("verify", ok=False)
    assert verified.exit_code == 0 and verified.output.startswith("ok:"), verified.output
    assert word in memd("grep", word).output


def mcp(vault: Vault, tool: str, **arguments: Any) -> Any:
    """One MCP tool call, in process, as an agent makes it."""
    server = build_server(Memory(vault))
    return anyio.run(server.call_tool, tool, arguments)


# -- control bytes ---------------------------------------------------------------


def test_a_nul_byte_on_stdin_is_kept_visibly_and_blocks_nothing(memd: Memd, vault: Vault) -> None:
    added = memd("add", input="fact \0 x\n")
    assert "fact \\x00 x" in added.output
    assert b"\0" not in vault.current.read_bytes()
    assert "- <seq=1," in vault.current.read_text() and "> fact \\x00 x\n" in vault.current.read_text()
    keeps_working(memd)
    assert "fact \\x00 x" in memd("grep", "x00").output  # the person's words are still there, spelled out


@pytest.mark.parametrize("stray", [b"\0", b"\xff\xfe"], ids=["nul", "not-utf-8"])
def test_a_stray_byte_in_current_md_is_named_and_never_refuses_an_add(memd: Memd, vault: Vault, stray: bytes) -> None:
    memd("add", "a fact")
    clean = vault.current.read_bytes()
    typed = clean + b"- <seq=2> written by an older memd " + stray + b" here\n"
    vault.current.write_bytes(typed)
    result = memd("add", "x")  # never refuse a write: the entry goes after the stray byte, untouched
    assert "warning: saved; CURRENT.md:8: " in result.output
    assert vault.current.read_bytes().startswith(typed) and vault.current.read_bytes().endswith(b"> x\n")
    status = memd("status")  # the one report that must work whatever the vault holds
    assert "warning: CURRENT.md:8: " in status.output and "consolidation waits until it is fixed" in status.output
    refused = memd("consolidate", ok=False)
    assert refused.exit_code == 1 and assert_clean(refused).startswith("memd: CURRENT.md:8: ")
    fixed = vault.current.read_bytes().replace(b"written by an older memd " + stray + b" here", b"written here")
    vault.current.write_bytes(fixed)  # the person removes it
    keeps_working(memd)


def test_a_topic_with_a_byte_that_is_no_utf_8_stays_searchable_and_is_named(memd: Memd, vault: Vault) -> None:
    memd("add", "Dana likes green tea")
    memd("consolidate")
    [topic] = vault.topic_files()
    topic.write_bytes(topic.read_bytes() + b"\n- caf\xe9 notes about the tea shop\n")  # typed in Latin-1
    found = memd("search", "tea").output
    assert "Dana likes green tea" in found and "caf\ufffd notes about the tea shop" in found
    status = memd("status")
    assert f"warning: skipped {vault.rel(topic)}:" in status.output and "not valid UTF-8" in status.output
    memd("add", "Dana buys oolong on Fridays")
    memd("consolidate")  # files the new entry elsewhere, leaves the unreadable topic alone
    assert topic.read_bytes().count(b"caf\xe9") == 1, "memd never rewrites the file it cannot read"
    assert "Dana buys oolong on Fridays" in memd("search", "oolong").output
    verified = memd("verify", ok=False)
    assert f"{vault.rel(topic)} cannot be read (not valid UTF-8)" in verified.output


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["add", "bell \x07 and escape \x1b[31m red"], "bell \\x07 and escape \\x1b[31m red"),
        (["add", "a C1 \x9b31m escape and DEL \x7f"], "a C1 \\x9b31m escape and DEL \\x7f"),
        (["add", "--src", "notes\x00.md", "sourced"], "src=notes\\x00.md"),
        (["add", "--meta", "mood=ok\x00", "with meta"], "mood=ok\\x00"),
    ],
    ids=["bell-escape", "c1-del", "src", "meta"],
)
def test_control_characters_anywhere_in_an_entry_are_spelled_out(
    memd: Memd, vault: Vault, args: list[str], shown: str
) -> None:
    memd(*args)
    text = vault.current.read_text()
    assert shown in text
    assert not any(ch in text for ch in "\0\x07\x1b\x7f\x9b")
    keeps_working(memd)


def test_tabs_and_line_breaks_are_kept(memd: Memd, vault: Vault) -> None:
    memd("add", "--one", "first\tcolumn\nsecond line")
    assert "> first\tcolumn\n  second line\n" in vault.current.read_text()


def test_mcp_memory_add_with_a_nul_byte_blocks_nothing(memd: Memd, vault: Vault) -> None:
    mcp(vault, "memory_add", text="told by an agent \0 with a NUL and a\u2028separator")
    assert "told by an agent \\x00 with a NUL and a\\u2028separator" in vault.current.read_text()
    keeps_working(memd)


def test_an_imported_chat_with_control_characters_is_stored_as_text(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(
        '[{"role": "user", "content": "The boiler \\u0000 is serviced in \\u001b[1m March.", "time": "2026-01-01"}]'
    )
    assert "+1 entries" in memd("ingest", str(chat)).output
    copies = list((vault.root / "sources").rglob("chat*.md"))
    assert copies and all(b"\0" not in p.read_bytes() and b"\x1b" not in p.read_bytes() for p in copies)
    assert "The boiler \\x00 is serviced in \\x1b[1m March." in vault.current.read_text()
    keeps_working(memd)
    assert memd("lint", ok=False).exit_code == 0


def test_a_note_file_with_a_nul_is_refused_in_one_line(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_bytes(b"The boiler \0 is serviced in March.\n")
    result = memd("ingest", str(note), ok=False)
    assert_clean(result)
    assert result.exit_code == 1 and f"{note}: rejected: binary file" in result.output
    keeps_working(memd)


# -- signatures quoted inside entry text --------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "note\n- <seq=999999998> quoted",
        "- <seq=999999997> starts quoted\n- <seq=999999996> and again",
        "<seq=999999995> at the start of the text",
        "note\r- <seq=999999994> after a carriage return",
        "note\x0c- <seq=999999993> after a form feed",
    ],
    ids=["second-line", "first-line", "bare", "carriage-return", "form-feed"],
)
def test_a_signature_quoted_in_an_entry_names_no_seq(memd: Memd, vault: Vault, text: str) -> None:
    memd("add", "--one", "--", text)
    memd("add", "one more")
    assert read_state(vault)[0].next_seq == 3  # the quoted seq did not move the counter
    keeps_working(memd, "first")
    keeps_working(memd, "second")  # and again once the quote sits in a topic
    assert read_state(vault)[0].next_seq < 10
    assert "999999" in memd("grep", "999999").output  # the quote is kept as written


def test_a_quoted_signature_through_mcp_names_no_seq(memd: Memd, vault: Vault) -> None:
    mcp(vault, "memory_add", text="agent note\n- <seq=999999998> quoted")
    mcp(vault, "memory_add", text="another")
    assert read_state(vault)[0].next_seq == 3
    keeps_working(memd)


# -- ranges in meta ------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1-999999999999", "1-100001", "1+3-99999999999999", "x", "123456789012345678901"])
def test_an_unbounded_supersedes_is_refused_at_add(memd: Memd, vault: Vault, value: str) -> None:
    before = vault.current.read_bytes()
    result = memd("add", "--meta", f"supersedes={value}", "x", ok=False)
    assert result.exit_code == 1
    assert "supersedes=" in assert_clean(result)
    assert vault.current.read_bytes() == before
    keeps_working(memd)


def test_a_bounded_supersedes_is_taken(memd: Memd, vault: Vault) -> None:
    memd("add", "old plan")
    memd("add", "--meta", "supersedes=1", "new plan")
    assert "supersedes=1> new plan" in vault.current.read_text()
    keeps_working(memd)


def test_mcp_meta_cannot_set_an_unbounded_supersedes(memd: Memd, vault: Vault) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    with pytest.raises(ToolError, match="meta cannot set supersedes: to replace a fact, call memory_update"):
        mcp(vault, "memory_add", text="x", meta={"supersedes": "1-999999999999"})
    keeps_working(memd)


def test_a_hand_written_unbounded_supersedes_is_a_lint_error_and_ignored(memd: Memd, vault: Vault) -> None:
    memd("add", "first")
    with vault.current.open("a") as f:
        f.write("- <seq=40,supersedes=1-999999999999> typed by hand\n")
    lint = memd("lint", ok=False)
    assert lint.exit_code == 1
    assert "CURRENT.md:8: meta supersedes=1-999999999999: seq '1-999999999999' names 999999999999 seqs" in lint.output
    proc = run_memd(vault, "consolidate", timeout=60)  # never expanded: no hang, no MemoryError
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    keeps_working(memd)
    assert "typed by hand" in memd("grep", "typed by hand").output


# -- the acknowledgement log -------------------------------------------------------------


ACK = '{{"seq": {seq}, "entry": "- <seq={entry_seq}> forged\\n", "at": "2026-11-26T00:00:00Z"}}\n'


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (ACK.format(seq="1e30", entry_seq=5), "seq 1e+30 is not a seq"),
        (ACK.format(seq="Infinity", entry_seq=5), "seq inf is not a seq"),
        (ACK.format(seq="-3", entry_seq=5), "seq -3 is not a seq"),
        (ACK.format(seq='"7"', entry_seq=7), "seq '7' is not a seq"),
        (ACK.format(seq="true", entry_seq=1), "seq True is not a seq"),
        (ACK.format(seq="10" * 20, entry_seq=5), f"seq {'10' * 20} is not a seq"),
        (ACK.format(seq="9", entry_seq=8), "seq 9: the entry is not one entry with that seq"),
        (
            '{"seq": 9, "entry": "- <seq=9> one\\n- <seq=10> two\\n", "at": "x"}\n',
            "seq 9: the entry is not one entry with that seq",
        ),
        ("[[[[\n", "not a JSON line"),
        ('{"seq": 9}\n', "entry and at must be text"),
    ],
    ids=["1e30", "infinity", "negative", "text", "bool", "huge", "other-seq", "two-entries", "torn", "no-entry"],
)
def test_a_forged_acknowledgement_is_skipped_with_a_warning(memd: Memd, vault: Vault, line: str, why: str) -> None:
    memd("add", "a real fact")
    with (vault.meta_dir / "acks.jsonl").open("a") as f:
        f.write(line)
    keeps_working(memd)
    assert "forged" not in vault.current.read_text() + memd("grep", "forged", ok=False).output  # never put back
    status = memd("status")
    assert_clean(status)
    assert f".memd/acks.jsonl:2: skipped: {why}" in status.stderr
    assert f".memd/acks.jsonl:2: warning: skipped: {why}" in memd("lint", ok=False).output


def test_a_torn_last_acknowledgement_is_no_damage(memd: Memd, vault: Vault) -> None:
    memd("add", "a real fact")
    with (vault.meta_dir / "acks.jsonl").open("a") as f:
        f.write('{"seq": 2, "entry": "- <seq')  # a crash mid-append
    assert "acks.jsonl" not in memd("status").stderr
    keeps_working(memd)


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda p, out: p.mkdir(), "is a folder"),
        (lambda p, out: p.symlink_to(out), "is a symbolic link"),
        (lambda p, out: os.mkfifo(p), "is not a regular file"),
    ],
    ids=["folder", "symlink", "fifo"],
)
def test_an_acknowledgement_log_of_the_wrong_kind_is_never_written_through(
    vault: Vault, tmp_path: Path, make: Any, kind: str
) -> None:
    outside = tmp_path / "outside.jsonl"
    make(vault.meta_dir / "acks.jsonl", outside)
    added = run_memd(vault, "add", "canary-zqx-7731 the entry is written", timeout=30)
    assert added.returncode == 0 and "Traceback" not in added.stderr, added.stderr
    assert "canary-zqx-7731" in vault.current.read_text()
    warnings = [line for line in added.stderr.splitlines() if line]
    assert len(warnings) == 1 and f".memd/acks.jsonl {kind}" in warnings[0], added.stderr
    assert not outside.exists()  # nothing written through the link
    for args in (["consolidate"], ["verify"], ["status"], ["add", "later"]):
        proc = run_memd(vault, *args, timeout=30)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
    assert not outside.exists()


# -- pipes and devices ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "commands"),
    [
        ("CURRENT.md", [["add", "x"], ["consolidate"], ["status"]]),
        (".memd/config.toml", [["add", "x"], ["consolidate"], ["status"], ["verify"], ["search", "x"]]),
    ],
    ids=["current", "config"],
)
def test_a_pipe_where_memd_reads_is_one_line_never_a_hang(
    memd: Memd, vault: Vault, name: str, commands: list[list[str]]
) -> None:
    memd("add", "before the pipe")
    path = vault.root / name
    saved = path.read_bytes()
    path.unlink()
    os.mkfifo(path)
    for args in commands:
        proc = run_memd(vault, *args, timeout=30)  # a hang fails here
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert "not a regular file" in assert_clean(proc, Path(name).name), args
    for args in (["verify"], ["search", "before"]) if name == "CURRENT.md" else ():
        assert_clean(run_memd(vault, *args, timeout=30))
    path.unlink()
    path.write_bytes(saved)
    keeps_working(memd)


@pytest.mark.slow  # five commands in their own processes for each file
@pytest.mark.parametrize(
    "name",
    [
        ".memd/seq.local",
        ".memd/devices.json",
        ".memd/verify.json",
        ".memd/ledger.jsonl",
        ".memd/state.json",
        ".memd/index/config.json",
    ],
)
def test_a_pipe_in_place_of_memds_own_files_never_hangs(memd: Memd, vault: Vault, name: str) -> None:
    memd("add", "before the pipe")
    memd("consolidate")
    memd("verify")
    path = vault.root / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    for args in (["add", "x"], ["consolidate"], ["status"], ["verify"], ["search", "before"]):
        proc = run_memd(vault, *args, timeout=30)  # a hang fails here
        assert_clean(proc, Path(name).name)
        if args[0] == "add":
            assert proc.returncode == 0, proc.stderr  # a write is never refused for memd's own record
    assert json.loads(memd("verify", "--json").output)["ok"]
    path.unlink(missing_ok=True)
    keeps_working(memd)


def test_ingest_of_a_device_is_refused_before_it_is_read(memd: Memd, vault: Vault) -> None:
    proc = run_memd(vault, "ingest", "--max-size", "1", "/dev/zero", timeout=60)
    assert_clean(proc)
    assert proc.returncode == 1 and "/dev/zero: rejected: not a regular file (a character device)" in proc.stderr
    keeps_working(memd)


def test_ingest_of_a_named_pipe_is_refused_never_waited_on(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    pipe = tmp_path / "p.json"
    os.mkfifo(pipe)
    proc = run_memd(vault, "ingest", str(pipe), timeout=30)  # a hang fails here
    assert_clean(proc)
    assert proc.returncode == 1 and f"memd: {pipe}: rejected: not a regular file (a named pipe)" in proc.stderr
    keeps_working(memd)


# -- links under .memd/ ----------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["index", "journal", "index/ENGINE"])
def test_a_linked_folder_under_memd_is_never_written_through(
    memd: Memd, vault: Vault, tmp_path: Path, folder: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    memd("add", "canary-zqx-7731 stays in the vault")
    if folder == "index/ENGINE":  # the search engine's own folder inside the index
        from memd.index.backends import resolve

        memd("search", "canary")
        folder = f"index/{resolve(vault.config.index_backend)}"
    link = vault.meta_dir / folder
    if link.exists():
        shutil.rmtree(link)
    link.symlink_to(outside)
    for args in (["search", "canary"], ["add", "more"], ["consolidate"], ["verify"], ["status"]):
        result = memd(*args, ok=False)
        error = assert_clean(result)
        assert result.exit_code == 0 or f".memd/{folder} is a symbolic link" in error, (args, result.output)
    assert list(outside.iterdir()) == []  # nothing written through the link
    link.unlink()
    keeps_working(memd)
    assert "canary" in memd("search", "canary").output


# -- tracebacks --------------------------------------------------------------------------------


def test_current_md_as_a_folder_is_one_line_and_puts_nothing_back(memd: Memd, vault: Vault) -> None:
    memd("add", "acknowledged before the folder")
    saved = vault.current.read_bytes()
    vault.current.unlink()
    vault.current.mkdir()
    for args in (["add", "x"], ["consolidate"], ["status"]):
        result = memd(*args, ok=False)
        assert result.exit_code == 1 and "CURRENT.md:1: is a folder" in assert_clean(result), args
    lint = memd("lint", ok=False)
    assert lint.exit_code == 1 and "CURRENT.md:1: is a folder" in lint.stdout  # not "ok: no problems"
    vault.current.rmdir()
    vault.current.write_bytes(saved)
    keeps_working(memd)
    assert vault.current.read_text().count("acknowledged before the folder") <= 1  # never appended twice


def test_a_file_where_memd_files_topics_is_named_by_lint(memd: Memd, vault: Vault) -> None:
    memd("add", "coffee with oat milk")
    shutil.rmtree(vault.topics_dir, ignore_errors=True)
    vault.topics_dir.write_text("not a folder\n")
    lint = memd("lint", ok=False)
    assert lint.exit_code == 1 and "topics:1: is a file, expected the folder" in lint.stdout


def test_a_file_name_that_is_not_utf8_is_skipped_and_named_by_lint(memd: Memd, vault: Vault) -> None:
    memd("add", "coffee with oat milk")
    memd("consolidate")
    root = os.fsencode(vault.root)
    with open(os.path.join(root, b"topics", b"bad\xff.md"), "wb") as f:
        f.write(b"# Bad\n- <seq=50> tea in a misnamed topic\n")
    os.mkdir(os.path.join(root, b"notes\xfe"))
    with open(os.path.join(root, b"notes\xfe", b"n.md"), "wb") as f:
        f.write(b"# Note\n- <seq=51> juice\n")
    for args in (["consolidate"], ["search", "oat"], ["list"], ["grep", "tea"], ["status"]):
        assert_clean(memd(*args, ok=False))
    assert "coffee with oat milk" in memd("search", "oat").output
    lint = memd("lint").output
    assert "topics/bad\\xff.md:1: warning: the name is not valid UTF-8" in lint
    assert "notes\\xfe:1: warning: the name is not valid UTF-8" in lint
    keeps_working(memd)
    committed = subprocess.run(
        ["git", "log", "--name-only", "--format="], cwd=vault.root, capture_output=True, check=True
    ).stdout
    assert b"bad\xff" not in committed and b"notes\xfe" not in committed  # never committed as memory


@pytest.mark.parametrize("pattern", ["a{1000000}", "(a{1000}){1000}", "x{99999999999999999999}"])
def test_a_pattern_that_would_exhaust_memory_is_one_line(memd: Memd, vault: Vault, pattern: str) -> None:
    memd("add", "aaaa")
    result = memd("grep", pattern, ok=False)
    assert result.exit_code == 1 and "repeats too much" in assert_clean(result)
    with pytest.raises(Exception, match="repeats too much"):
        mcp(vault, "memory_grep", pattern=pattern)
    assert "aaaa" in memd("grep", "a{4}").output  # an ordinary count still works
    keeps_working(memd)


@pytest.mark.parametrize("tool", ["memory_read", "memory_grep"])
def test_an_mcp_doc_with_a_nul_byte_is_no_document(memd: Memd, vault: Vault, tool: str) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    arguments: dict[str, Any] = {"doc": "topics/\0x.md"} | ({"pattern": "x"} if tool == "memory_grep" else {})
    with pytest.raises(ToolError, match="no document"):
        mcp(vault, tool, **arguments)
    keeps_working(memd)


def test_add_from_an_endless_stdin_stops_at_the_size_limit(memd: Memd, vault: Vault) -> None:
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run(
            [sys.executable, "-m", "memd", "--vault", str(vault.root), "add"],
            stdin=zero,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert proc.returncode == 1 and "standard input is longer than" in assert_clean(proc)
    keeps_working(memd)
