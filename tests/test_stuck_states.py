"""No state a person must repair by hand: a line typed anywhere, a scratch file an
editor leaves, a signed line the reader does not take for an entry; after each,
`memd add`, `memd consolidate` and `memd verify` go on working."""

from __future__ import annotations

import subprocess

import pytest

from memd.vault.vault import GITIGNORE_TEMPLATE, Vault

from .conftest import Memd

HIGH = "- <seq=999999999,time=2026-01-01T00:00:00Z,source=user> x\n"


def keeps_working(memd: Memd) -> None:
    memd("add", "Waters the basil on Sundays")
    memd("consolidate")
    assert memd("verify").output.startswith("ok:")
    assert "basil" in memd("search", "basil").output


def committed_names(vault: Vault) -> str:
    return subprocess.run(
        ["git", "-C", str(vault.root), "log", "--all", "--name-only", "--format="], capture_output=True, text=True
    ).stdout


# -- a seq at the end of the range ------------------------------------------------------------


@pytest.mark.parametrize("where", ["notes/plants.md", "CURRENT.md", "topics/plants.md"])
def test_a_seq_at_the_end_of_the_range_never_blocks_an_add(memd: Memd, vault: Vault, where: str) -> None:
    memd("add", "Bought a new pot for the fig")
    path = vault.root / where
    path.parent.mkdir(parents=True, exist_ok=True)
    if where.startswith("topics/"):
        path.write_text("---\nid: plants\nsummary: plants\n---\n# Plants\n" + HIGH)
    else:
        with path.open("a") as out:
            out.write(HIGH)
    added = memd("add", "Repotted the fig in April").output
    assert "seq=2," in added  # past the counter: the seq at the end of the range is left alone
    memd("add", "The fig fruits in August")
    keeps_working(memd)
    fig = [line for path in vault.entry_files() for line in path.read_text().splitlines() if "fig" in line]
    assert fig and all("999999999" not in line for line in fig)


def test_a_seq_past_the_counter_is_still_never_reused(memd: Memd, vault: Vault) -> None:
    memd("add", "Bought a new pot for the fig")
    (vault.root / "notes.md").write_text(
        "# Notes\n- <seq=3,time=2026-01-01T00:00:00Z,source=user> three\n" + HIGH.replace("x", "end of range")
    )
    first = memd("add", "one").output
    second = memd("add", "two").output
    assert "seq=3," not in first + second and "seq=999999999" not in first + second


# -- editors' scratch files -------------------------------------------------------------------

SCRATCH = ["topics/x.md~", "topics/.x.md.swp", "topics/.#x.md", "topics/4913", "topics/x.tmp", "notes.md.tmp", "x.md~"]


@pytest.mark.parametrize("gitignore", ["new", "older"])
def test_editor_scratch_files_are_never_committed(memd: Memd, vault: Vault, gitignore: str) -> None:
    if gitignore == "older":  # a vault made before its .gitignore listed them
        older = GITIGNORE_TEMPLATE.split("# editors'")[0]
        (vault.root / ".gitignore").write_text(older)
        subprocess.run(["git", "-C", str(vault.root), "commit", "-qam", "older ignores"], check=True)
    memd("add", "Bought a new pot for the fig")
    memd("consolidate")
    for rel in SCRATCH:
        (vault.root / rel).write_text("half-saved text\n")
    (vault.root / "plants.md").write_text("# Plants\n\nThe fig likes sun.\n")
    memd("consolidate")
    names = committed_names(vault)
    assert "plants.md" in names  # the person's real edit is committed
    assert [rel for rel in SCRATCH if rel in names] == []
    keeps_working(memd)
    assert [rel for rel in SCRATCH if rel in committed_names(vault)] == []


def test_a_new_vault_ignores_scratch_files_for_git_too(vault: Vault) -> None:
    (vault.root / "topics" / "x.md~").parent.mkdir(exist_ok=True)
    (vault.root / "topics" / "x.md~").write_text("backup\n")
    (vault.root / ".#x.md").write_text("lock\n")
    status = subprocess.run(
        ["git", "-C", str(vault.root), "status", "--porcelain", "--untracked-files=all"], capture_output=True, text=True
    ).stdout
    assert "x.md~" not in status and ".#x.md" not in status


# -- a signed line the reader does not take for an entry --------------------------------------


@pytest.mark.parametrize(
    "typed",
    [
        "```\n- <seq=79,time=2026-01-01T00:00:00Z,source=user> fenced\n```\n",
        "- <seq=79,time=2026-01-01T00:00:00Z,source=user no closing bracket\n",
    ],
    ids=["in-a-fence", "no-closing-bracket"],
)
def test_a_signed_line_the_reader_skips_is_not_reported_missing(memd: Memd, vault: Vault, typed: str) -> None:
    memd("add", "first")
    with vault.current.open("a") as buffer:
        buffer.write(typed)
    memd("add", "after")
    memd("consolidate")
    assert memd("verify").output.startswith("ok:")
    assert "seq=79" in vault.current.read_text()  # the line is kept as it was typed
    advice = memd("lint", ok=False).output  # and lint says why it is no entry, and what makes it one
    assert "close the fence above it" in advice if "```" in typed else "missing '>'" in advice
    keeps_working(memd)
    assert "seq=79," not in "".join(p.read_text() for p in vault.topic_files())


def test_a_seq_of_no_device_is_named_with_a_fix_that_works(memd: Memd, vault: Vault) -> None:
    memd("add", "Bought a new pot for the fig")
    (vault.root / "notes.md").write_text("# Notes\n- <seq=1000000005,time=2026-01-01T00:00:00Z,source=user> x\n")
    memd("add", "Repotted the fig in April")  # adds go on
    report = memd("verify", ok=False).output
    assert "notes.md:2" in report and "`memd forget 1000000005`" in report
    memd("forget", "1000000005")
    keeps_working(memd)


def test_lint_sees_a_fence_where_the_reader_does(memd: Memd, vault: Vault) -> None:
    from memd.core.document import parse_document

    memd("add", "first")
    stamp = "time=2026-01-01T00:00:00Z,source=user"
    # Indented, three backticks are no fence to memd: the signed line after them is an entry.
    typed = f"  ```\n- <seq=79,{stamp}> after an indented fence\n  ```\n```\n- <seq=80,{stamp}> fenced\n```\n"
    with vault.current.open("a") as buffer:
        buffer.write(typed)
    text = vault.current.read_text()
    assert {seq for e in parse_document(text).signed() for seq in e.entry.signature.seq} >= {79}  # type: ignore[union-attr]
    warned = [line for line in memd("lint", ok=False).output.splitlines() if "fence is text" in line]
    assert len(warned) == 1 and f"CURRENT.md:{text.splitlines().index(f'- <seq=80,{stamp}> fenced') + 1}:" in warned[0]
