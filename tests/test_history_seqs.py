"""The seqs `verify` counts at each commit from what the commit changed are the
seqs grepping that commit's whole tree finds (`git.log.seqs_at`), whatever the
files hold: entries a person deleted or copied, signed lines in fences, tabs,
ranges, Windows line ends, files added and removed, merges."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memd.git import changes
from memd.git.log import machine_email, seqs_at
from memd.vault.vault import Vault


def git(vault: Vault, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault.root), *args], capture_output=True, text=True, check=True).stdout


PERSON = ("-c", "user.name=Ada", "-c", "user.email=ada@example.org")


def commit(vault: Vault, files: dict[str, str | None], message: str = "edit") -> None:
    """Write (or, for None, delete) each file and commit them as a person."""
    for rel, text in files.items():
        path = vault.root / rel
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode())
    git(vault, "add", "-A", "CURRENT.md", "topics")
    git(vault, *PERSON, "commit", "-q", "--allow-empty", "-m", message)


def merge_a_branch(vault: Vault, theirs: list[dict[str, str | None]], ours: dict[str, str | None]) -> None:
    """Commit ``theirs`` on a branch and ``ours`` beside it, then merge the branch (as a sync does)."""
    git(vault, "checkout", "-q", "-b", "other")
    for files in theirs:
        commit(vault, files)
    git(vault, "checkout", "-q", "-")
    commit(vault, ours)
    git(vault, *PERSON, "merge", "-q", "--no-edit", "other")


def counted(vault: Vault, after: str | None = None) -> dict[str, set[int]]:
    history = changes.steps(vault, machine_email(vault), after)
    return {step.sha: seqs for step, seqs, _ in changes.walk(vault, history)}


def grepped(vault: Vault, shas: list[str]) -> dict[str, set[int]]:
    return {sha: seqs_at(vault, sha) for sha in shas}


SETTINGS = (
    ("log.showRoot", "false"),
    ("diff.renames", "copies"),
    ("core.abbrev", "12"),
    ("grep.lineNumber", "true"),
    ("grep.column", "true"),
    ("color.ui", "always"),
    ("color.grep", "always"),
)
FOOD = "- <seq=11> tea\n-\t<seq=4> jam\n```\n- <seq=3> bread\n```\n"


def test_each_commit_holds_the_seqs_its_whole_tree_names(vault: Vault) -> None:
    head = "# CURRENT\n\n"
    commit(vault, {"CURRENT.md": head + "- <seq=1> milk\n- <seq=2> eggs\n- <seq=3> bread\n"})
    # Moved to a topic, one copied twice, one in a fence (still a line git counts), a tab.
    commit(
        vault,
        {
            "CURRENT.md": head + "- <seq=2> eggs\n",
            "topics/food.md": f"# Food\n- <seq=1> milk\n- <seq=1> milk\n{FOOD}",
        },
    )
    # One of the two copies deleted by hand: seq 1 is still held by the other.
    commit(
        vault, {"topics/food.md": "# Food\n- <seq=1> milk\n- <seq=11> tea\n-\t<seq=4> jam\n```\n- <seq=3> bread\n```\n"}
    )
    # Ranges and folds, Windows line ends, a topic in a folder, a quoted signature that names nothing.
    commit(
        vault,
        {
            "topics/home/chores.md": "# Chores\r\n- <seq=5-7> dishes\r\n* <seq=8+12> floors\r\n  said <seq=9>\r\n",
            "CURRENT.md": head + "- <seq=2> eggs\n+ <seq=10> not a list we write, still an entry line\n",
        },
    )
    commit(vault, {"topics/food.md": None})  # a topic deleted
    commit(vault, {"CURRENT.md": head})  # the buffer emptied
    # A person's settings that change what `git log` and `git grep` print leave the count as it is.
    for key, value in SETTINGS:
        git(vault, "config", key, value)
    shas = git(vault, "rev-list", "--reverse", "HEAD").split()
    walked = counted(vault)
    assert set(walked) <= set(shas)
    assert walked == grepped(vault, list(walked))
    assert walked[shas[-1]] == {5, 6, 7, 8, 12}


def test_a_merge_and_the_branches_before_it_are_counted_as_grep_counts_them(vault: Vault) -> None:
    commit(vault, {"CURRENT.md": "- <seq=1> one\n"})
    branch: list[dict[str, str | None]] = [
        {"topics/a.md": "- <seq=2> two\n"},
        {"topics/a.md": "- <seq=2> two\n- <seq=3> three\n"},
    ]
    merge_a_branch(vault, branch, {"CURRENT.md": "- <seq=1> one\n- <seq=4> four\n"})
    commit(vault, {"CURRENT.md": "- <seq=4> four\n"})
    walked = counted(vault)
    assert walked == grepped(vault, list(walked))
    assert walked[git(vault, "rev-parse", "HEAD").strip()] == {2, 3, 4}


def test_copies_of_an_entry_are_counted_line_by_line_across_a_merge(vault: Vault) -> None:
    # The merge is counted whole (by grep, line by line); the commit after it, from the
    # merge's count: deleting both copies of seq 5 leaves none.
    commit(vault, {"CURRENT.md": "- <seq=1> one\n"})
    copies = "- <seq=5> five\n- <seq=5> five\n- <seq=1> one\n"
    merge_a_branch(vault, [{"topics/a.md": "- <seq=2> two\n"}], {"CURRENT.md": copies})
    commit(vault, {"CURRENT.md": "- <seq=1> one\n"})
    walked = counted(vault)
    assert walked == grepped(vault, list(walked))
    assert walked[git(vault, "rev-parse", "HEAD").strip()] == {1, 2}


def test_what_git_does_not_read_as_a_file_s_text_is_counted_as_grep_counts_it(vault: Vault) -> None:
    commit(vault, {"CURRENT.md": "- <seq=1> one\n"})
    # A file git takes for binary (a NUL byte, or by .gitattributes) is text to memd, and to grep here.
    commit(vault, {"topics/nul.md": "- <seq=2> two\n\x00\n", "topics/marked.md": "- <seq=3> three\n"})
    (vault.root / ".gitattributes").write_text("topics/marked.md binary\n")
    git(vault, "add", ".gitattributes")
    commit(vault, {"topics/marked.md": "- <seq=3> three\n- <seq=4> four\n"})
    # A symbolic link is never followed: its target names nothing, even one that looks like an entry.
    (vault.root / "topics" / "nul.md").unlink()
    (vault.root / "topics" / "nul.md").symlink_to("- <seq=2> two")
    commit(vault, {"topics/sub.md": "- <seq=7> seven\n"})
    # A file that becomes a submodule (a commit, no text) takes its entries' lines with it.
    head = git(vault, "rev-parse", "HEAD").strip()
    git(vault, "rm", "-q", "--cached", "topics/sub.md")
    git(vault, "update-index", "--add", "--cacheinfo", f"160000,{head},topics/sub.md")
    git(vault, *PERSON, "commit", "-qm", "a submodule")
    walked = counted(vault)
    assert walked == grepped(vault, list(walked))
    assert walked[head] == {1, 3, 4, 7}
    assert walked[git(vault, "rev-parse", "HEAD").strip()] == {1, 3, 4}


def test_a_walk_resumed_after_a_commit_counts_from_there(vault: Vault) -> None:
    commit(vault, {"CURRENT.md": "- <seq=1> one\n- <seq=2> two\n"})
    middle = git(vault, "rev-parse", "HEAD").strip()
    commit(vault, {"topics/t.md": "- <seq=2> two\n", "CURRENT.md": "- <seq=1> one\n"})
    commit(vault, {"CURRENT.md": "- <seq=1> one\n- <seq=3> three\n"})
    walked = counted(vault, after=middle)
    assert middle not in walked and len(walked) == 2
    assert walked == grepped(vault, list(walked))


LINES = st.sampled_from(
    [
        "- <seq=1> a",
        "- <seq=2> b",
        "* <seq=3-4> c",
        "-\t<seq=5+6> d",
        "  - <seq=7> indented, no entry",
        "text <seq=8> quoted",
        "```",
        "# Heading",
        "",
        "- <seq=1> a",
    ]
)
VERSIONS = st.lists(st.lists(LINES, max_size=8).map(lambda lines: "\n".join(lines) + "\n"), min_size=1, max_size=4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(current=VERSIONS, topic=VERSIONS, resumed=st.integers(min_value=0, max_value=4))
def test_any_sequence_of_versions_is_counted_as_grep_counts_it(
    tmp_path: Path, current: list[str], topic: list[str], resumed: int
) -> None:
    from memd.app import Memory

    vault = Memory.init(tmp_path / f"v{len(list(tmp_path.iterdir()))}").vault
    for n in range(max(len(current), len(topic))):
        files: dict[str, str | None] = {}
        if n < len(current):
            files["CURRENT.md"] = current[n]
        if n < len(topic):
            files["topics/t.md"] = topic[n] if topic[n].strip() else None
        commit(vault, files)
    # Walked from the start, or resumed after a commit (its first step counted by grep).
    shas = git(vault, "rev-list", "--reverse", "HEAD").split()
    walked = counted(vault, after=shas[resumed] if resumed < len(shas) - 1 else None)
    assert walked == grepped(vault, list(walked))


def test_a_first_commit_that_holds_entries_is_counted_whatever_git_is_told_to_show(tmp_path: Path) -> None:
    from memd.app import Memory

    root = tmp_path / "notes"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "CURRENT.md").write_text("- <seq=1> one\n- <seq=2> two\n")
    subprocess.run(["git", "-C", str(root), "add", "CURRENT.md"], check=True)
    subprocess.run(["git", "-C", str(root), *PERSON, "commit", "-qm", "my notes"], check=True)
    vault = Memory.init(root).vault
    git(vault, "config", "log.showRoot", "false")  # git log would print no files for a first commit
    walked = counted(vault)
    assert walked == grepped(vault, list(walked))
    assert all(seqs == {1, 2} for seqs in walked.values())
