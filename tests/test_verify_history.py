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
from memd.consolidation.verify import verify_vault
from memd.core.document import Document, Known, parse_document
from memd.core.errors import FormatError
from memd.core.signature import SeqSet
from memd.git import log
from memd.vault.vault import Vault

SUBJECTS = ("garden", "running", "cooking", "travel")
ParsedBlobs = log.ParsedBlobs


def git(vault: Vault, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault.root), *args], capture_output=True, text=True, check=True).stdout


def consolidation_by_memd(vault: Vault, message: str) -> None:
    """Commit the working tree as a consolidation memd made (its author, its trailer)."""
    git(vault, "add", "-A")
    git(vault, "-c", "user.name=memd", "-c", "user.email=memd@localhost", "commit", "-qm", message)


def walk(monkeypatch: pytest.MonkeyPatch, vault: Vault, budget: int | None) -> tuple[dict[str, Any], list[Any]]:
    """verify --full's report, and the caches its walk made (``budget`` 0: nothing held, every blob parsed)."""
    made: list[Any] = []

    class Counted(ParsedBlobs):
        def __init__(self, derive: Any, budget_: int = 32 << 20, size: Any = None) -> None:
            super().__init__(derive, budget_ if budget is None else budget, size)
            made.append(self)

    monkeypatch.setattr(log, "ParsedBlobs", Counted)
    return verify_vault(vault, full=True).to_json(), made


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

    cached, caches = walk(monkeypatch, vault, None)
    every, uncached = walk(monkeypatch, vault, 0)
    assert cached == every
    assert any("lost words" in problem for problem in cached["problems"])
    assert cached["commits_checked"] >= 18
    [cache], [fresh] = caches, uncached
    # Each commit reads its parent's version of a file its previous commit wrote: held, not parsed again.
    assert cache.parsed < fresh.parsed
    assert cache.held <= cache.budget and fresh.held == 0


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
