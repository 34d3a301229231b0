"""Filtered searches rank exactly as the unfiltered ranking with the filter applied
afterwards; neighbour and id lookups find exactly the records holding the seqs or ids."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from memd.index import Filters, IndexStore
from memd.index.retrieve import query_terms
from memd.index.signals import passes
from memd.vault.vault import Vault

WORDS = ["coffee", "milk", "trip", "kyoto", "dog", "walk", "tea", *(f"w{i}" for i in range(60))]
START = datetime(2025, 1, 1, tzinfo=UTC)


def words_only(vault: Vault) -> None:
    config = vault.root / ".memd" / "config.toml"
    config.write_text(config.read_text().replace('embedding = "minilm-l6"', 'embedding = "none"'))


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from memd.app.init import init_vault

    vault = init_vault(tmp_path_factory.mktemp("filters") / "vault").vault
    words_only(vault)
    rng = random.Random(5)
    seq = 1
    for topic in range(12):
        lines = [f"# Heading {topic}"]
        for _ in range(40):
            moment = (START + timedelta(hours=7 * seq)).strftime("%Y-%m-%dT%H:%M")
            source = rng.choice(["user", "user", "assistant"])
            text = " ".join(rng.choices(WORDS, k=rng.randint(3, 12)))
            if rng.random() < 0.1:
                text += " yesterday"  # names a day of its own: counts for the period holding that day
            lines.append(f"- <seq={seq},time={moment},source={source}> {text}")
            seq += 1
        (vault.topics_dir / f"t{topic}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = IndexStore(vault)
    store.sync()
    yield store.backend()
    store.close()


FILTERS = [
    Filters(source="user"),
    Filters(kind="entry"),
    Filters(doc="t3"),
    Filters(since=datetime(2025, 3, 1, tzinfo=UTC)),
    Filters(until=datetime(2025, 2, 10, tzinfo=UTC), source="assistant"),
    Filters(since=datetime(2025, 2, 1, tzinfo=UTC), until=datetime(2025, 2, 28, tzinfo=UTC)),
    Filters(since=datetime(2030, 1, 1, tzinfo=UTC)),  # nothing that late
]


@pytest.mark.parametrize("filters", FILTERS)
def test_a_filtered_ranking_is_the_full_ranking_filtered(backend, filters: Filters) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(11)
    for _ in range(12):
        terms = query_terms(backend, " ".join(rng.choices(WORDS[:12], k=rng.randint(1, 3))))
        everything = backend.search(terms, 100_000, Filters())
        expected = [
            (hit.record.rid, round(hit.score, 9))
            for hit in everything
            if passes(hit.record, filters) and (not filters.kind or hit.record.kind == filters.kind)
        ]
        got = [(hit.record.rid, round(hit.score, 9)) for hit in backend.search(terms, 25, filters)]
        assert got == expected[:25]


def test_by_seq_finds_every_entry_holding_the_seqs(backend) -> None:  # type: ignore[no-untyped-def]
    everything = backend.search(query_terms(backend, " ".join(WORDS)), 100_000, Filters(kind="entry"))
    by_seq = {seq: hit.record for hit in everything for seq in hit.record.seqs}
    wanted = {1, 2, 40, 41, 77, 300, 479, 480, 481, 99_999}
    got = backend.by_seq(wanted)
    assert sorted(record.rid for record in got) == sorted({by_seq[s].rid for s in wanted if s in by_seq})
    assert all(record.kind == "entry" for record in got)
    assert backend.by_seq(()) == []


def test_get_finds_records_by_id_and_leaves_unknown_ids_out(backend) -> None:  # type: ignore[no-untyped-def]
    some = [hit.record for hit in backend.search(query_terms(backend, "coffee kyoto"), 8, Filters())]
    found = backend.get([record.rid for record in some] + ["topics/none.md#L1"])
    assert found == {record.rid: record for record in some}
    assert backend.get([]) == {}


def test_search_json_stays_clean_on_a_terminal(vault: Vault, memd, monkeypatch: pytest.MonkeyPatch) -> None:
    import memd.cli.read as read
    import memd.cli.root as cli

    words_only(vault)
    monkeypatch.setattr(cli, "on_terminal", lambda: True)
    monkeypatch.setattr(read, "BAR_MIN_FILES", 2)
    for n in range(5):
        (vault.topics_dir / f"t{n}.md").write_text(f"# T\n- <seq={n + 1},source=user> kyoto trip {n}\n")
    result = memd("search", "kyoto", "--json")
    assert len(json.loads(result.stdout)) == 5 and result.stderr == ""
    (vault.index_dir / "manifest.json").unlink()  # the next search rebuilds the index
    shown = memd("search", "kyoto")
    assert "indexing" in shown.stderr and "kyoto" in shown.stdout
