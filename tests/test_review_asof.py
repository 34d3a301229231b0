"""`--as-of DATE|REV`: search and ask over the vault as it was, read from git."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .conftest import Memd
from .review_story import NEW_PHONE, OLD_PHONE, Story, build, git


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    return build(tmp_path_factory.mktemp("story") / "vault")


@pytest.fixture
def memd(story: Story, tmp_path: Path) -> Memd:
    return Memd(story.copy(tmp_path / "vault"))


def search(memd: Memd, query: str, *args: str) -> list[dict]:  # type: ignore[type-arg]
    return json.loads(memd("search", query, "--json", *args).output)


def state(memd: Memd) -> tuple[str, dict[str, bytes]]:
    """What must not change: git's view (status, index) and every memory file."""
    status = git(memd.vault.root, "status", "--porcelain", "--untracked-files=all", "--ignored=no")
    files = {p.name: p.read_bytes() for p in [memd.vault.current, *memd.vault.topic_files()]}
    index = (memd.vault.root / ".git" / "index").read_bytes()
    return status + str(hash(index)), files


def test_the_old_fact_before_the_supersession_and_the_new_one_after(memd: Memd, story: Story) -> None:
    before = state(memd)
    old = search(memd, "Dana phone number", "--as-of", "2026-09-05")
    assert old[0]["text"] == OLD_PHONE and all(hit["text"] != NEW_PHONE for hit in old)
    c1 = story.commits["C1"]
    assert old[0]["commit"] == c1 and old[0]["cite"] == f"{old[0]['path']}:{old[0]['line']}@{c1[:7]}"
    new = search(memd, "Dana phone number", "--as-of", "2026-09-10")  # the day C2 was committed
    assert new[0]["text"] == NEW_PHONE and all(hit["text"] != OLD_PHONE for hit in new)
    assert new[0]["cite"].endswith(f"@{story.commits['C2'][:7]}")
    now = search(memd, "Dana phone number")
    assert now[0]["text"] == NEW_PHONE and "@" not in now[0]["cite"]
    assert state(memd) == before, "the working tree and git's index are untouched"


def test_a_revision_works_like_a_date_and_the_text_output_cites_the_commit(memd: Memd, story: Story) -> None:
    c1 = story.commits["C1"]
    assert search(memd, "phone", "--as-of", c1) == search(memd, "phone", "--as-of", "2026-09-01")
    assert search(memd, "phone", "--as-of", c1[:10])[0]["text"] == OLD_PHONE
    text = memd("search", "phone", "--as-of", "HEAD~6").output
    assert f"@{git(memd.vault.root, 'rev-parse', '--short=7', 'HEAD~6').strip()}" in text.splitlines()[0]


def test_ask_as_of_answers_from_the_past_with_citations_at_that_commit(memd: Memd, story: Story) -> None:
    short = story.commits["C1"][:7]
    data = json.loads(memd("ask", "what is Dana's phone number?", "--as-of", "2026-09-05", "--json").output)
    assert data["found"] and OLD_PHONE in data["answer"] and NEW_PHONE not in data["answer"]
    assert f"@{short}]" in data["answer"]
    assert all(item["cite"].endswith(f"@{short}") for item in data["evidence"])
    assert data["as_of"]["commit"] == story.commits["C1"] and data["as_of"]["asked"] == "2026-09-05"
    text = memd("ask", "what is Dana's phone number?", "--as-of", "2026-09-05").output
    assert OLD_PHONE in text and f"@{short}" in text
    now = json.loads(memd("ask", "what is Dana's phone number?", "--json").output)
    assert NEW_PHONE in now["answer"]


def test_snapshots_are_cached_and_rebuilt_when_damaged(memd: Memd, story: Story) -> None:
    search(memd, "phone", "--as-of", "2026-09-05")
    folder = memd.vault.root / ".memd" / "index" / "asof" / story.commits["C1"]
    assert (folder / ".complete").exists() and (folder / "topics").is_dir()
    assert not git(memd.vault.root, "status", "--porcelain"), "snapshots live in the git-ignored index folder"
    (folder / ".memd" / "index" / "manifest.json").write_text("{broken")
    assert search(memd, "phone", "--as-of", "2026-09-05")[0]["text"] == OLD_PHONE
    for rev in ["HEAD~1", "HEAD~2", "HEAD~3", "HEAD~4", "HEAD~5", "HEAD~6", "HEAD~7", "HEAD~8", "HEAD~9"]:
        search(memd, "coffee", "--as-of", rev)
    kept = [p for p in (memd.vault.root / ".memd" / "index" / "asof").iterdir() if (p / ".complete").exists()]
    assert len(kept) == 8


def test_errors_are_one_line(memd: Memd, tmp_path: Path) -> None:
    result = memd("search", "phone", "--as-of", "2020-01-01", ok=False)
    assert result.exit_code == 1 and result.output.strip() == "memd: the vault has no commit on or before 2020-01-01"
    result = memd("search", "phone", "--as-of", "no-such-branch", ok=False)
    assert result.exit_code == 1 and "no commit 'no-such-branch'" in result.output
    result = memd("ask", "phone?", "--as-of", "2026-13-45", ok=False)
    assert result.exit_code == 1 and "Traceback" not in result.output and "2026-13-45" in result.output
    subprocess.run(["rm", "-rf", str(memd.vault.root / ".git")], check=True)
    result = memd("search", "phone", "--as-of", "HEAD", ok=False)
    assert result.exit_code == 1 and "not in a git repository" in result.output
