"""The index: records with exact line ranges, incremental updates, self-repair."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memd.index import IndexStore
from memd.index.fields import record_data, record_from_data
from memd.index.records import Record, records_for
from memd.vault.vault import Vault

TOPIC = """\
---
id: coffee
summary: "coffee and allergies"
---
# Coffee
- <seq=12,time=2026-11-20T09:12,source=user> Takes coffee with oat milk.
- <seq=41-43,time=2026-11-21T08:00,source=user,src=chat-3#L12> Switched to decaf
  after 2 pm.
# Health
## Allergies
- <seq=44,time=2026-11-21T10:29,source=user,confidence=high> Allergic to peanuts.
Prose under the heading.
"""


def write_topic(vault: Vault, slug: str, text: str) -> Path:
    path = vault.topics_dir / f"{slug}.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_records_cover_entries_and_heading_partitions_with_line_ranges() -> None:
    records = {r.rid: r for r in records_for("topics/coffee.md", TOPIC)}
    decaf = records["topics/coffee.md#L7"]
    assert (decaf.kind, decaf.line, decaf.end_line) == ("entry", 7, 8)
    assert decaf.text == "Switched to decaf\nafter 2 pm."
    assert decaf.seqs == (41, 42, 43) and decaf.src == "chat-3#L12"
    assert decaf.prev == "topics/coffee.md#L6" and decaf.next == "topics/coffee.md#L11"
    assert decaf.block == "topics/coffee.md#P5"
    coffee = records["topics/coffee.md#P5"]
    assert (coffee.kind, coffee.line, coffee.end_line, coffee.headings) == ("partition", 5, 8, ("Coffee",))
    assert coffee.seqs == (12, 41, 42, 43)
    allergies = records["topics/coffee.md#P10"]
    assert allergies.headings == ("Health", "Allergies")
    assert "Prose under the heading." in allergies.text
    assert records["topics/coffee.md#L11"].extra == (("confidence", "high"),)
    # An empty heading (# Health) has nothing to index.
    assert "topics/coffee.md#P9" not in records


def test_current_gives_entry_records_only() -> None:
    text = "# CURRENT\n\n- <seq=1,source=user> one\n- <seq=2,source=user> two\n"
    records = records_for("CURRENT.md", text)
    assert [r.kind for r in records] == ["entry", "entry"]
    assert records[0].doc == "CURRENT" and records[1].prev == records[0].rid


_texts = st.text(max_size=40)
_maybe = st.none() | _texts


@given(
    st.builds(
        Record,
        rid=_texts,
        kind=st.sampled_from(["entry", "partition"]),
        doc=_texts,
        path=_texts,
        headings=st.tuples(_texts, _texts),
        line=st.integers(0, 10**6),
        end_line=st.integers(0, 10**6),
        text=st.text(max_size=200),
        seq=_maybe,
        seqs=st.lists(st.integers(1, 10**9), max_size=4).map(tuple),
        time=_maybe,
        source=_maybe,
        src=_maybe,
        extra=st.lists(st.tuples(_texts, _texts), max_size=3).map(tuple),
        prev=_maybe,
        next=_maybe,
        block=_maybe,
    )
)
def test_a_record_reads_back_from_its_stored_form_as_it_was(record: Record) -> None:
    again = record_from_data(record_data(record))
    assert again == record and hash(again) == hash(record) and again.cite == record.cite


def test_a_stored_form_of_another_shape_is_read_by_the_dataclass_rules() -> None:
    record = records_for("topics/coffee.md", TOPIC)[1]
    stored = json.loads(record_data(record))
    del stored["block"]  # a field with a default: read as the default, never left unset
    assert record_from_data(json.dumps(stored)) == dataclasses.replace(record, block=None)
    with pytest.raises(TypeError):
        record_from_data(json.dumps({**stored, "colour": "red"}))


def test_only_changed_files_are_reindexed(vault: Vault) -> None:
    write_topic(vault, "coffee", TOPIC)
    write_topic(vault, "travel", "# Kyoto\n- <seq=50,source=user> Trip in April.\n")
    store = IndexStore(vault)
    first = store.sync()
    assert first.rebuilt
    assert store.sync().updated == ()

    write_topic(vault, "travel", "# Kyoto\n- <seq=50,source=user> Trip moved to May.\n")
    report = store.sync()
    assert report.updated == ("topics/travel.md",) and not report.rebuilt

    # Same bytes, new mtime: hashed, found unchanged, not re-indexed.
    path = vault.topics_dir / "coffee.md"
    path.write_text(path.read_text())
    assert store.sync().updated == ()

    (vault.topics_dir / "travel.md").unlink()
    assert store.sync().removed == ("topics/travel.md",)
    store.close()


def test_missing_manifest_or_lost_records_trigger_a_rebuild(vault: Vault, memd) -> None:
    write_topic(vault, "coffee", TOPIC)
    memd("reindex")
    (vault.index_dir / "manifest.json").unlink()
    assert "peanuts" in memd("search", "peanuts").output

    manifest = json.loads((vault.index_dir / "manifest.json").read_text())
    manifest["records"] += 1  # the engine holds fewer records than the manifest vouches for
    (vault.index_dir / "manifest.json").write_text(json.dumps(manifest))
    store = IndexStore(vault)
    assert store.sync().rebuilt
    store.close()


@pytest.mark.parametrize("backend", ["tantivy", "whoosh"])
def test_corrupted_index_folder_is_rebuilt(vault: Vault, memd, backend: str) -> None:
    memd("config", "set", "index.backend", backend)
    write_topic(vault, "coffee", TOPIC)
    memd("reindex")
    for file in (vault.index_dir / backend).iterdir():
        file.write_bytes(b"\x00garbage")
    hits = json.loads(memd("search", "peanuts", "--json").output)
    assert [h["path"] for h in hits][:1] == ["topics/coffee.md"]


def test_reindex_reports_files_and_records(vault: Vault, memd) -> None:
    write_topic(vault, "coffee", TOPIC)
    memd("add", "Booked the ryokan")
    result = json.loads(memd("reindex", "--json").output)
    assert result["files"] == 2  # CURRENT.md and the topic
    assert result["records"] == len(records_for("topics/coffee.md", TOPIC)) + 1


def test_add_and_help_do_not_import_whoosh(vault: Vault) -> None:
    code = (
        "import sys; from click.testing import CliRunner; from memd.cli import main; "
        f"r = CliRunner().invoke(main, ['--vault', {str(vault.root)!r}, 'add', 'x']); "
        "h = CliRunner().invoke(main, ['--help']); "
        "print(r.exit_code, h.exit_code, 'whoosh' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "0", "False"]


@pytest.mark.slow  # a large index
def test_filtered_searches_survive_whoosh_quality_skipping(vault: Vault) -> None:
    # Regression: Whoosh's block-quality skipping asserted inside a filtered
    # (Require) query once a vault held a few hundred entries.
    import random

    from memd.ask.tools import search
    from memd.index import Filters
    from memd.vault.buffer import NewEntry, append_entries

    rng = random.Random(3)
    words = ["coffee", "milk", "trip", "kyoto", "dog", *(f"w{i}" for i in range(200))]
    items = [
        NewEntry(" ".join(rng.choices(words, k=rng.randint(3, 25))), None, rng.choice(["user", "ai"]))
        for _ in range(600)
    ]
    append_entries(vault, items)
    store = IndexStore(vault)
    for word in words[:20]:
        for source in ("user", "ai"):
            found = search(vault, f"{word} coffee milk", 20, Filters(source=source), store=store)
            assert found and {hit["source"] for hit in found} == {source}
    store.close()
