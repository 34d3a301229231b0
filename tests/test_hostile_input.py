"""Bad input a person or an attacker really produced: each answer is an exit
code and at most one line naming the file, never a traceback or a hang, and
the rest of the vault keeps working."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memd.vault.state import read_state
from memd.vault.vault import Vault

from .conftest import Memd
from .hostile import REPO, assert_clean, run_memd

GOOD = '---\nid: coffee\nsummary: "coffee"\n---\n# Coffee\n- <seq=1,time=2026-11-20T09:00:00Z,source=user> oat milk\n'
LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n" for prev, name in zip("abcdefg", "bcdefgh", strict=True)
)


def topic(vault: Vault, name: str, text: str) -> Path:
    path = vault.topics_dir / f"{name}.md"
    path.write_text(text)
    return path


@pytest.fixture
def coffee(vault: Vault) -> Path:
    """A good topic that must keep working beside the bad file."""
    return topic(vault, "coffee", GOOD)


@pytest.mark.slow  # bombs, 10k-deep input and full disks take seconds each
@pytest.mark.parametrize(
    ("frontmatter", "message"),
    [
        ('a: &a ["x", "x"]\n' + LAUGHS, "aliases"),  # a billion laughs
        ('a: &a ["x", "x"]\n' + LAUGHS + "summary: *h\n", "aliases"),  # ... inside summary
        ('a: &a ["x", "x"]\n' + LAUGHS + "update_log: *h\n", "aliases"),  # ... and update_log
        ("a: &a [*a]\n", "aliases"),  # a recursive alias
        ("x: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than"),
        ("x:\n" + "".join(" " * i + "- \n" for i in range(1, 1200)), "nested more than"),
        ("[a]: 1\n", "must be plain text"),
        ("? [a, b]\n: 1\n", "must be plain text"),
        ("n: " + "9" * 5000 + "\n", "invalid YAML"),
    ],
    ids=["laughs", "in-summary", "in-update-log", "recursive", "deep-flow", "deep-block", "key", "complex", "num"],
)
def test_hostile_frontmatter_is_one_lint_error_and_the_rest_works(
    memd: Memd, vault: Vault, coffee: Path, frontmatter: str, message: str
) -> None:
    topic(vault, "bad", f"---\n{frontmatter}---\n# Bad\n- <seq=2> still here\n")
    for args in (["list"], ["show", "bad", "--json"], ["verify"], ["search", "oat"], ["consolidate"]):
        assert_clean(run_memd(vault, *args, timeout=60), "bad.md")
    lint = run_memd(vault, "lint")
    assert_clean(lint)
    assert lint.returncode == 1
    assert any(line.startswith("topics/bad.md:") and message in line for line in lint.stdout.splitlines()), lint.stdout
    assert "oat milk" in run_memd(vault, "search", "oat").stdout


def test_a_date_that_is_no_date_is_read_as_text_with_a_warning(memd: Memd, vault: Vault) -> None:
    topic(vault, "t", '---\nid: t\nsummary: "t"\ncreated: 2026-99-99\n---\n# T\n- <seq=1> a fact\n')
    for args in (["list"], ["show", "t", "--json"], ["consolidate"], ["verify"]):
        assert_clean(memd(*args, ok=False))
    shown = json.loads(memd("show", "t", "--json").stdout)
    assert shown["frontmatter"]["created"] == "2026-99-99"
    lint = memd("lint")
    assert "topics/t.md:1: warning: frontmatter created '2026-99-99' is not a real date" in lint.output


@pytest.mark.parametrize("seq", ["1-999999999999", "1-100000000", "3+1-99999999999999", "123456789012345678901"])
def test_a_huge_seq_range_is_reported_never_expanded(vault: Vault, coffee: Path, seq: str) -> None:
    topic(vault, "typo", f"# Typo\n- <seq={seq}> typo\n")
    for args in (["list"], ["add", "a new fact"], ["consolidate"], ["verify"], ["status"]):
        assert_clean(run_memd(vault, *args, timeout=60))
    lint = run_memd(vault, "lint", timeout=60)
    assert f"topics/typo.md:2: malformed signature: seq '{seq}'" in lint.stdout
    state, _ = read_state(vault)
    assert state.next_seq < 100  # the typo did not move the counter


def test_a_time_out_of_range_in_utc_is_a_lint_error(memd: Memd, vault: Vault) -> None:
    topic(vault, "t", "# T\n- <seq=1,time=0001-01-01T00:00:00+23:59> x\n- <seq=2,time=9999-12-31T23:59-23:59> y\n")
    for args in (["status"], ["list"], ["consolidate"], ["verify"], ["search", "x"]):
        assert_clean(memd(*args, ok=False))
    lint = memd("lint", ok=False).output
    assert "topics/t.md:2: time '0001-01-01T00:00:00+23:59' is out of range" in lint
    assert "topics/t.md:3: time '9999-12-31T23:59-23:59' is out of range" in lint


@pytest.mark.slow  # bombs, 10k-deep input and full disks take seconds each
def test_deeply_nested_lists_and_huge_lines_are_read_like_any_text(memd: Memd, vault: Vault) -> None:
    nested = "".join("  " * i + f"- level {i}\n" for i in range(10_000))
    (vault.root / "CURRENT.md").write_text(vault.current.read_text() + "- " * 10_000 + "deep\n" + nested)
    topic(vault, "wide", "# " + "a" + " " * 200_000 + "x\n- " + "word " * 100_000 + "\n")
    for args in (["list"], ["lint"], ["search", "level"], ["consolidate"], ["verify"]):
        assert_clean(run_memd(vault, *args, timeout=120))


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("deep-objects.json", '{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
        ("deep.jsonl", '{"role": "user", "content": "hi"}\n' + "[" * 100_000 + "]" * 100_000 + "\n{}\n", "line 2"),
    ],
)
def test_deeply_nested_json_is_rejected_in_one_line(
    memd: Memd, vault: Vault, tmp_path: Path, name: str, content: str, reason: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    result = memd("ingest", str(path), ok=False)
    assert_clean(result)
    assert result.exit_code == 1
    assert f"{path}: rejected: " in result.output and reason in result.output


def test_a_5000_digit_number_is_kept_as_text(memd: Memd, vault: Vault, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text('[{"role": "user", "content": "The boiler is serviced in March.", "time": ' + "9" * 5000 + "}]")
    result = memd("ingest", str(path))
    assert "+1 entries" in result.output
    assert "The boiler is serviced in March." in vault.current.read_text()


def test_a_link_out_of_the_vault_is_never_read(memd: Memd, vault: Vault, coffee: Path, tmp_path: Path) -> None:
    secret = tmp_path / "outside.md"
    secret.write_text("# Outside\n- <seq=7> canary-zqx-7731 lives outside the vault\n")
    (vault.topics_dir / "pw.md").symlink_to(secret)
    (vault.root / "people").mkdir()
    (vault.root / "people" / "linked").symlink_to(tmp_path)
    for args in (
        ["list"],
        ["lint"],
        ["consolidate"],
        ["verify"],
        ["search", "canary"],
        ["grep", "canary"],
        ["show", "pw"],
        ["read", "pw"],
        ["lint", str(vault.topics_dir / "pw.md")],
    ):
        result = memd(*args, ok=False)
        assert_clean(result)
        assert "canary" not in result.stdout, args
    lint = memd("lint", ok=False).output
    assert "topics/pw.md:1: warning: a symbolic link; memd does not follow links" in lint
    assert "people/linked" not in memd("list").output
    assert secret.read_text().startswith("# Outside")  # never written either
    index = b"".join(p.read_bytes() for p in vault.index_dir.rglob("*") if p.is_file())
    assert b"canary" not in index


@pytest.mark.slow  # bombs, 10k-deep input and full disks take seconds each
def test_a_full_disk_or_file_size_limit_is_one_line(memd: Memd, vault: Vault) -> None:
    memd("add", "\n".join(f"fact {i} about the garden and the {i}th bed of tomatoes" for i in range(300)))

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    for args in (["reindex"], ["search", "tomatoes"], ["add", "one more fact"]):
        proc = subprocess.run(
            [sys.executable, "-m", "memd", "--vault", str(vault.root), *args],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=limited,
            # no .pyc files: Python's own cache would be cut short by the limit too
            env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"},
        )
        error = assert_clean(proc)
        assert proc.returncode == 1 and "file too large" in error, proc.stderr
    assert "tomatoes" in memd("search", "tomatoes").stdout  # with room again, all is well


def test_a_read_only_file_system_is_one_line(memd: Memd, vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    real_open = os.open

    def read_only(path: object, flags: int, *args: object) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    memd("add", "before the disk went read-only")
    monkeypatch.setattr(os, "open", read_only)
    error = assert_clean(memd("add", "a fact", ok=False))
    assert "read-only file system" in error


def test_read_only_files_are_left_alone_with_a_message(memd: Memd, vault: Vault, coffee: Path) -> None:
    memd("add", "Takes coffee with oat milk every morning")
    coffee.chmod(0o444)
    result = memd("consolidate")
    assert f"warning: {coffee} is read-only (mode 444); memd leaves it alone" in result.output
    assert coffee.read_text() == GOOD
    vault.current.chmod(0o444)
    before = vault.current.read_text()
    error = assert_clean(memd("add", "one more", ok=False))
    assert "CURRENT.md is read-only" in error
    assert vault.current.read_text() == before
    vault.current.chmod(0o644)
    assert memd("add", "one more").exit_code == 0


def test_a_read_only_lock_file_still_locks(memd: Memd, vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    memd("add", "first")
    lock = str(vault.meta_dir / "lock")
    real_open = os.open

    def no_write(path: object, flags: int, *args: object) -> int:
        if str(path) == lock and flags & os.O_RDWR:
            raise PermissionError(errno.EACCES, "Permission denied", lock)  # what a 0444 lock gives a non-root user
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", no_write)
    assert memd("add", "second").exit_code == 0


def test_one_windows_line_in_the_buffer_hides_nothing(memd: Memd, vault: Vault) -> None:
    memd("add", "Dana takes oat milk")
    with vault.current.open("ab") as buffer:
        buffer.write(b"- Sam likes tea\r\n")  # typed in an editor that writes CRLF
    buffer_state = json.loads(memd("status", "--json").output)["buffer"]
    assert (buffer_state["entries"], buffer_state["unsigned"]) == (2, 1)  # the typed line counted
    assert "oat milk" in memd("search", "oat milk").output
    added = memd("add", "one more").output
    assert "CURRENT.md:" in added
    line = int(added.split("CURRENT.md:")[1].split(":")[0])
    assert vault.current.read_text().split("\n")[line - 1].endswith("one more")  # the line it says
    memd("consolidate")
    assert json.loads(memd("verify", "--json").output)["ok"]
    filed = "".join(path.read_text() for path in vault.topics_dir.glob("*.md"))
    assert all(said in filed for said in ("Dana takes oat milk", "Sam likes tea", "one more"))


@pytest.mark.parametrize("target_exists", [True, False], ids=["to-a-file", "dangling"])
def test_a_link_in_the_locks_place_is_never_written_through(
    memd: Memd, vault: Vault, tmp_path: Path, target_exists: bool
) -> None:
    target = tmp_path / "someone-elses-file.txt"
    if target_exists:
        target.write_text("IMPORTANT USER DATA\n")
    lock = vault.meta_dir / "lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(target)
    assert memd("add", "written with the lock held").exit_code == 0
    if target_exists:
        assert target.read_text() == "IMPORTANT USER DATA\n"
    else:
        assert not target.exists()
    assert not lock.is_symlink() and lock.is_file()  # memd's own lock file now
    assert "written with the lock held" in vault.current.read_text()
    assert memd("add", "and again").exit_code == 0


@pytest.mark.parametrize(
    ("setup", "name"),
    [
        (lambda v: (v.meta_dir / "lock").mkdir(), ".memd/lock"),
        (lambda v: (shutil.rmtree(v.index_dir, True), v.index_dir.write_text("not a folder")), ".memd/index"),
        (lambda v: (v.state_path.unlink(), v.state_path.mkdir()), "state.json"),
    ],
    ids=["lock-folder", "index-file", "state-folder"],
)
def test_a_wrong_kind_of_file_where_memd_keeps_its_own_is_one_line(memd: Memd, vault: Vault, setup, name: str) -> None:  # type: ignore[no-untyped-def]
    setup(vault)
    for args in (["add", "a fact"], ["search", "fact"], ["status"]):
        assert_clean(memd(*args, ok=False), name)


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ({"next_seq": 3, "buffer_since": 7}, "buffer_since 7 is not a time"),
        ({"next_seq": 10**30}, "out of range"),
        ({"next_seq": 3, "epoch": "x"}, "epoch 'x' is not a count"),
    ],
)
def test_a_state_file_with_wrong_values_is_a_warning(memd: Memd, vault: Vault, state: dict, problem: str) -> None:  # type: ignore[type-arg]
    vault.state_path.write_text(json.dumps(state))
    assert read_state(vault)[1] is not None and problem in (read_state(vault)[1] or "")
    status = memd("status")
    assert problem in status.output
    added = memd("add", "a fact").output
    assert "<seq=1," in added or "<seq=3," in added  # never a 31-digit seq


def test_a_name_too_long_for_the_file_system_is_no_such_document(memd: Memd, vault: Vault) -> None:
    from memd import Memory
    from memd.core.errors import NotFound

    memory = Memory.open(vault.root)
    for ask in (
        lambda: memory.read("a" * 100_000),
        lambda: memory.topic("a" * 5_000),
        lambda: memory.grep("x", doc="b" * 5_000),
    ):
        with pytest.raises(NotFound):  # the file system's "File name too long" was a traceback
            ask()
    assert_clean(memd("read", "a" * 5_000, ok=False), "no document")


def test_a_topic_memd_cannot_read_is_left_alone_and_never_filed_twice(
    memd: Memd, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import pathlib

    memd("add", "Takes coffee with oat milk")
    memd("consolidate")
    [topic] = vault.topic_files()
    with topic.open("a") as edited:
        edited.write("A line typed by hand.\n")
    locked = str(topic)
    real_open, real_read_bytes = os.open, pathlib.Path.read_bytes

    def denied(path: object) -> None:
        if str(path) == locked:  # what chmod 000 gives a user who is not root
            raise PermissionError(errno.EACCES, "Permission denied", locked)

    def no_open(path: object, flags: int, *args: object) -> int:
        denied(path)
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    def no_read(path: pathlib.Path) -> bytes:
        denied(path)
        return real_read_bytes(path)

    monkeypatch.setattr(os, "open", no_open)
    monkeypatch.setattr(pathlib.Path, "read_bytes", no_read)
    memd("add", "Runs on Tuesdays by the river")
    outputs = []
    for _ in range(2):  # the second run must not file the unreadable topic's entries again
        run = memd("consolidate", ok=False)
        assert_clean(run, topic.name)
        outputs.append(run.output)
    assert "cannot read" in outputs[0], outputs
    monkeypatch.undo()
    assert "A line typed by hand." in topic.read_text()
    report = json.loads(memd("verify", "--json").output)
    assert report["ok"], report
    files = [*vault.topic_files(), vault.current]
    holding = [e for path in files for e in vault.read(path).signed() if "coffee" in e.entry.text]
    assert len(holding) == 1


def test_a_folder_named_like_a_new_topic_does_not_block_consolidation(memd: Memd, vault: Vault) -> None:
    from memd import Memory

    memory = Memory.open(vault.root)
    memory.add("Reviewed the code of the parser")
    planned = memory.consolidate(dry_run=True).new_topics
    for topic_id in planned:
        (vault.topics_dir / f"{topic_id}.md").mkdir(parents=True)  # a folder where the new topic would go
    outcome = assert_clean(memd("consolidate", ok=False), "")
    assert outcome == "" and json.loads(memd("verify", "--json").output)["ok"]
    assert all((vault.topics_dir / f"{topic_id}.md").is_dir() for topic_id in planned)
    assert any("Reviewed the code of the parser" in path.read_text() for path in vault.topic_files())


def test_verify_names_a_file_it_cannot_read_instead_of_calling_its_seqs_lost(memd: Memd, vault: Vault) -> None:
    memd("add", "Takes coffee with oat milk")
    memd("consolidate")
    [topic] = vault.topic_files()
    topic.write_bytes(topic.read_bytes() + b"- typed with a stray byte \xff\n")
    report = json.loads(memd("verify", "--json", ok=False).output)
    rel = vault.rel(topic)
    assert report["problems"] == [f"{rel} cannot be read (not valid UTF-8), so its seqs cannot be checked"]


def test_who_said_it_and_where_from_are_one_word_each_as_a_signature_holds(memd: Memd, vault: Vault) -> None:
    spaced = memd("add", "--source", "my phone", "Parked on level 3", ok=False)
    assert spaced.exit_code == 1
    assert "source 'my phone' cannot be written in a signature, which holds no spaces: write my-phone" in spaced.output
    assert "cannot be empty" in memd("add", "--source", "", "Parked on level 3", ok=False).output
    assert "src 'a b' cannot" in memd("add", "--src", "a b", "Parked on level 3", ok=False).output
    assert "Parked" not in vault.current.read_text()
    # A time typed with a space is the same time, written as a signature holds it.
    memd("add", "--time", "2026-12-01 10:00", "Parked on level 4")
    assert "<seq=1,time=2026-12-01T10:00,source=user> Parked on level 4" in vault.current.read_text()
    # An import's own turn ids become one word in src=, never a refused import.
    chat = vault.root.parent / "chat.json"
    session = [{"speaker": "Ana", "dia_id": "D1 1", "text": "I parked on level 5"}]
    chat.write_text(json.dumps([{"conversation": {"session_1": session}, "qa": []}]))
    memd("ingest", str(chat))
    assert ",src=D1-1;sources/" in vault.current.read_text()
    assert "ok: no problems" in memd("lint").output
