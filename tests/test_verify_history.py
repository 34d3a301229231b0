"""`memd verify --full` over a long history parses each file version (git
blob) once, and reports exactly what parsing every version at every commit
reports."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memd import Memory
from memd.consolidation.commit_words import CommitWords
from memd.consolidation.verify import verify_vault
from memd.core.document import Document, Known, parse_document
from memd.core.errors import FormatError
from memd.core.signature import SeqSet
from memd.git import versions
from memd.vault.vault import Vault

SUBJECTS = ("garden", "running", "cooking", "travel")
ParsedBlobs = versions.ParsedBlobs


def git(vault: Vault, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault.root), *args], capture_output=True, text=True, check=True).stdout


def consolidation_by_memd(vault: Vault, message: str) -> None:
    """Commit the working tree as a consolidation memd made (its author, its trailer)."""
    git(vault, "add", "-A")
    git(vault, "-c", "user.name=memd", "-c", "user.email=memd@localhost", "commit", "-qm", message)


def walk(monkeypatch: pytest.MonkeyPatch, vault: Vault, whole: bool) -> tuple[dict[str, Any], int]:
    """verify --full's report, and the characters of history it parsed (``whole``: every version
    of every file a commit changed parsed whole, as the walk did before it read only what changed)."""
    from memd.core import document

    parsed = 0
    parse = document.parse_document

    def counted(text: str, known: Any = None) -> Any:
        nonlocal parsed
        parsed += len(text)
        return parse(text, known)

    def every_version(self: CommitWords, olds: Any, news: Any, held: Any) -> Any:
        return self._whole(olds, news)

    with monkeypatch.context() as patched:
        patched.setattr(document, "parse_document", counted)
        if whole:
            patched.setattr(CommitWords, "compare", every_version)
        return verify_vault(vault, full=True).to_json(), parsed


def test_verify_full_over_many_commits_reports_what_parsing_every_version_reports(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = Memory.open(vault.root)
    for n in range(16):
        subject = SUBJECTS[n % len(SUBJECTS)]
        memory.add([f"{subject} note {n}.{k}: {subject} detail {n * 7 + k}" for k in range(4)])
        memory.consolidate()
    # A consolidation that changed an entry's words, and one more after it.
    [topic, *_] = sorted(vault.topic_files())
    topic.write_text(topic.read_text().replace("detail 0", "detail 12345"))
    consolidation_by_memd(vault, "consolidate: 0 entries\n\nMemd-Consolidation: 99")
    memory.add(["garden note last: the shed is painted"])
    memory.consolidate()

    changed, fewer = walk(monkeypatch, vault, whole=False)
    every, more = walk(monkeypatch, vault, whole=True)
    assert changed == every
    assert any("lost words" in problem for problem in changed["problems"])
    assert changed["commits_checked"] >= 18
    assert fewer < more  # only the entries a commit wrote anew are parsed


@pytest.mark.parametrize("fenced", [False, True])
def test_an_entry_copied_beside_lines_left_as_they_were_is_compared_with_them(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, fenced: bool
) -> None:
    # The words before are in lines the commit did not touch (the copy's source stays in the
    # file it changed): the parent's files are read whole, so the copy's lost words are found.
    memory = Memory.open(vault.root)
    memory.add(["garden note: the tomatoes want feeding every week", "running note: ten kilometres on Sunday"])
    memory.consolidate()
    [kept, *_] = sorted(vault.topic_files())
    text = kept.read_text()
    line = next(line for line in text.splitlines() if line.startswith("- <seq="))
    fence = "```\nnot an entry\n```\n" if fenced else ""
    kept.write_text(f"{text}{fence}{line.split('> ', 1)[0]}> something else entirely\n")
    consolidation_by_memd(vault, "consolidate: 0 entries\n\nMemd-Consolidation: 99")
    (vault.meta_dir / "acks.jsonl").unlink()  # acknowledged long ago: only history holds the words before
    changed, _ = walk(monkeypatch, vault, whole=False)
    every, _ = walk(monkeypatch, vault, whole=True)
    assert changed == every
    assert any("lost words" in problem for problem in changed["problems"])


def test_parsed_blobs_stay_within_their_budget_and_parse_again_what_they_let_go() -> None:
    derived: list[int] = []

    def derive(document: Document) -> int:
        derived.append(len(document.signed()))
        return derived[-1]

    blobs = [f"- <seq={n}> entry {n} {'x' * 100}\n".encode() for n in range(1, 41)]
    cache = ParsedBlobs(derive, budget=1000)
    assert [cache.get(blob) for blob in blobs] == [1] * 40
    assert cache.parsed == 40 and cache.held <= 1000
    assert len(cache._values) < 40
    cache.get(blobs[-1])  # the newest is still held
    assert cache.parsed == 40
    cache.get(blobs[0])  # the oldest went: parsed again
    assert cache.parsed == 41 and cache.held <= 1000
    too_big = b"- <seq=99> " + b"y" * 2000 + b"\n"
    assert cache.get(too_big) == 1 and cache.held <= 1000


@pytest.mark.parametrize(
    ("text", "limit"),
    [("0", None), ("01", None), ("1" * 16, None), ("\u0663", None), ("12", 0), ("", None)],
)
def test_a_single_seq_is_refused_as_before(text: str, limit: int | None) -> None:
    with pytest.raises(FormatError):
        SeqSet.parse(text, limit)


@pytest.mark.parametrize("text", ["1", "12", "9" * 15, "100000"])
def test_a_single_seq_parses_as_a_range_of_one(text: str) -> None:
    assert SeqSet.parse(text).parts == ((int(text), int(text)),)
    assert SeqSet.parse(text, 1) == SeqSet(((int(text), int(text)),))
    assert len(SeqSet.parse(text)) == 1 and list(SeqSet.parse(text)) == [int(text)]


LINES = st.sampled_from(
    [
        "- <seq=1,time=2026-01-01T10:00,source=user> Ran 5 km",
        "- <seq=1,time=2026-01-01T10:00,source=user> Ran 12 km",
        "- <seq=2+4-6> merged [source](sources/a.md)",
        "* <seq=3,src=sources/a.md> linked [source](../sources/a.md)",
        "- <seq=0> zero",
        "- <seq=7",
        "- <time=1> no seq",
        "- plain item",
        "  continued",
        "\tmore",
        "```",
        "# Heading",
        "## Sub ##",
        "---",
        "id: x",
        "",
        "prose",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(LINES, max_size=12).map("\n".join), min_size=1, max_size=4))
def test_items_parsed_before_give_the_same_documents(texts: list[str]) -> None:
    known: Known = {}
    for text in texts:
        shared = parse_document(text, known)
        assert shared == parse_document(text) and shared.problems == parse_document(text).problems
        assert shared.render() == text


def test_parsed_items_past_their_share_start_a_generation_and_keep_what_is_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memd.core import document

    parsed: list[Any] = []
    parse_item = document._parse_item
    monkeypatch.setattr(document, "_parse_item", lambda item, *rest: parsed.append(item) or parse_item(item, *rest))
    cache = ParsedBlobs(lambda doc: len(doc.signed()), budget=2 * ParsedBlobs.ITEM_BYTES)
    monkeypatch.setattr(ParsedBlobs, "KNOWN_SHARE", 1)  # a generation holds one item's worth here

    def version(*seqs: int) -> bytes:
        return "".join(f"- <seq={n}> entry {n}\n" for n in seqs).encode()

    assert cache.get(version(1, 2)) == 2  # items 1, 2 parsed
    assert cache.get(version(2, 3)) == 2  # a new generation: 2 moves up from the old one, 3 is parsed
    assert cache.get(version(3, 4)) == 2
    assert [item.group("rest").split(">")[0] for item in parsed] == ["<seq=1", "<seq=2", "<seq=3", "<seq=4"]
