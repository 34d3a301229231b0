"""A real conversation (LoCoMo dev slice, conversation 1) consolidates into
topics a person can read, with every turn accounted for."""

from __future__ import annotations

from pathlib import Path

import pytest

from memd.consolidation.run import consolidate
from memd.consolidation.verify import verify_vault
from memd.ingest.locomo import load_locomo
from memd.vault.buffer import NewEntry, append_entries
from memd.vault.vault import Vault

from .conftest import REPO

DATA = REPO.parent / "shared" / "data" / "locomo-dev.json"


@pytest.mark.skipif(not DATA.exists(), reason="the LoCoMo development slice is not beside the repository")
def test_a_locomo_conversation_becomes_recognisable_topics(vault: Vault, capsys: pytest.CaptureFixture[str]) -> None:
    conversation = load_locomo(Path(DATA))[0]
    turns = [t for t in conversation.turns if t.text]
    append_entries(vault, [NewEntry(f"{t.speaker}: {t.text}", t.time, "import:locomo", t.dia_id) for t in turns])
    outcome = consolidate(vault)
    assert outcome.entries == len(turns)

    with capsys.disabled():
        print(f"\n{len(turns)} turns -> {len(vault.topic_files())} topics ({outcome.subject})")
        for path in vault.topic_files():
            document = vault.read(path)
            data = document.frontmatter.data  # type: ignore[union-attr]
            sections = [e.headings[-1] for e in document.entries() if e.headings]
            print(f"  {data['tokens']:5d} tokens  {path.stem:34s} sections: {', '.join(dict.fromkeys(sections))[:70]}")

    report = verify_vault(vault)
    assert not report.problems
    # Every turn is findable by its dia_id, in exactly one live entry.
    sources = [
        ref
        for path in vault.topic_files()
        for e in vault.read(path).signed()
        for ref in (e.entry.signature.src or "").split(";")  # type: ignore[union-attr]
    ]
    assert sorted(sources) == sorted(t.dia_id for t in turns)
    sizes = [vault.read(p).frontmatter.data["tokens"] for p in vault.topic_files()]  # type: ignore[union-attr]
    assert max(sizes) <= vault.config.split_tokens
    # Each speaker's turns make topics titled with their name ("Caroline", then
    # "Caroline — <subject>" for the pieces past the split size), in sections by subject.
    documents = [vault.read(p) for p in vault.topic_files()]
    owners = {(d.title() or "").split(" \u2014 ")[0] for d in documents}
    assert owners == {t.speaker for t in turns}
    assert sorted(d.title() or "" for d in documents if " \u2014 " not in (d.title() or "")) == sorted(owners)
    for name in owners:
        theirs = [d for d in documents if (d.title() or "").split(" \u2014 ")[0] == name]
        assert len({e.headings[-1] for d in theirs for e in d.entries() if e.headings}) >= 10
        assert {e.entry.text.split(":")[0] for d in theirs for e in d.signed()} == {name}
