"""Per-process record caches are bounded by the bytes they hold: a reader
that keeps searching never holds more decoded records than the budget."""

from __future__ import annotations

import pytest

from memd.index import Filters, IndexStore, fields
from memd.index.bytecache import ByteLRU, budget_bytes, keyed_record_bytes, record_bytes, stored_record_bytes
from memd.index.fields import record_data
from memd.index.records import Record, records_for
from memd.index.retrieve import query_terms
from memd.vault.vault import Vault


def record(n: int, words: int = 20) -> Record:
    return Record(f"r{n}", "entry", "doc", "topics/doc.md", ("Heading",), n, n, f"note {n} " + "word " * words, str(n))


@pytest.fixture(autouse=True)
def words_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_EMBEDDING", "none")


def test_a_byte_bounded_cache_trims_the_least_recently_used_past_its_budget() -> None:
    records = [record(n) for n in range(200)]
    budget = 20 * record_bytes(records[0])
    cache: ByteLRU[int, Record] = ByteLRU(budget, keyed_record_bytes)
    for n, value in enumerate(records):
        cache.put(n, value)
        if n == 5:
            assert cache.get(0) is records[0]  # used again: kept past the others of its age
        assert cache.held <= budget
    assert 15 <= len(cache) <= 20
    assert cache.get(0) is None and cache.get(1) is None and cache.get(199) is records[199]
    assert cache.held == sum(keyed_record_bytes(n, records[n]) for n in range(200) if n in cache)
    long = record(999, words=100_000)  # one record bigger than the whole budget: not kept, nothing dropped
    held = len(cache)
    cache.put(999, long)
    assert 999 not in cache and len(cache) == held
    cache.clear()
    assert cache.held == 0 and len(cache) == 0


def test_longer_records_fit_fewer_in_the_same_budget() -> None:
    short: ByteLRU[int, Record] = ByteLRU(100_000, keyed_record_bytes)
    long: ByteLRU[int, Record] = ByteLRU(100_000, keyed_record_bytes)
    for n in range(1000):
        short.put(n, record(n, words=5))
        long.put(n, record(n, words=2000))
    assert len(long) * 5 < len(short) and short.held <= 100_000 and long.held <= 100_000


def test_the_budget_is_set_in_megabytes_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMD_RECORD_CACHE_MB", raising=False)
    assert budget_bytes() == 16 << 20 and budget_bytes(share=0.25) == 4 << 20
    monkeypatch.setenv("MEMD_RECORD_CACHE_MB", "2")
    assert budget_bytes() == 2 << 20
    for odd in ("lots", "nan", "-5"):
        monkeypatch.setenv("MEMD_RECORD_CACHE_MB", odd)
        assert budget_bytes() in (16 << 20, 0)
    monkeypatch.setenv("MEMD_RECORD_CACHE_MB", "0")
    cache: ByteLRU[int, Record] = ByteLRU(budget_bytes(), keyed_record_bytes)
    cache.put(1, record(1))
    assert len(cache) == 0


def test_the_stored_form_cache_stays_within_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fields, "_DECODED", ByteLRU(50_000, keyed_record_bytes))
    for n in range(500):
        data = fields.record_data(record(n))
        assert fields.record_from_data(data) == record(n)
        assert fields.record_from_data(data) is fields.record_from_data(data)
    assert 0 < len(fields._DECODED) < 500 and fields._DECODED.held <= 50_000


def test_a_searching_tantivy_reader_holds_at_most_its_budget_of_records(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tantivy")
    from memd.index import tantivy_backend

    monkeypatch.setenv("MEMD_RECORD_CACHE_MB", "0.1")  # ~100 KB: a few hundred of these records
    lines = [
        f"- <seq={n},time=2026-01-01T10:00,source=user> note {n} about topic{n % 40} " + "filler " * 30
        for n in range(1, 1201)
    ]
    (vault.topics_dir / "many.md").write_text("# Many\n" + "\n".join(lines) + "\n", encoding="utf-8")
    store = IndexStore(vault, "tantivy")
    store.sync()
    backend = store.backend()
    assert isinstance(backend, tantivy_backend.TantivyBackend)
    budget = backend._records.budget
    assert budget == int(0.1 * 1024 * 1024)
    seen: set[str] = set()
    for n in range(40):
        hits = backend.search(query_terms(backend, f"note topic{n} filler"), 100, Filters())
        seen.update(hit.record.rid for hit in hits)
        assert backend._records.held <= budget
    assert len(seen) > len(backend._records) > 0  # more records met than kept: trimmed, not cleared
    store.close()


def test_the_analysed_words_of_texts_stay_within_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from memd.index import diversify
    from memd.index.analysis import analyse
    from memd.index.bytecache import terms_bytes

    class Words:
        analysis = "whoosh-stemming"

        def analyse(self, text: str) -> list[str]:
            return analyse(text)

    monkeypatch.setattr(diversify, "_TERMS", ByteLRU(20_000, terms_bytes))
    for n in range(400):
        text = f"walked the dog number {n} along the river"
        assert diversify.distinct_terms(Words(), text) == tuple(dict.fromkeys(analyse(text)))  # type: ignore[arg-type]
        assert diversify._TERMS.held <= 20_000
    assert 0 < len(diversify._TERMS) < 400


def test_a_record_weighed_by_its_stored_form_weighs_about_what_its_fields_do() -> None:
    chat = "\n".join(
        f"- <seq={n},time=2026-11-{n % 28 + 1:02d}T09:00,source=import:chat,src=chat.md#L{n}> Mel: "
        + "We went camping by the lake, the kids loved the stars. " * (1 + n % 5)
        for n in range(1, 90)
    )
    found = records_for("topics/melanie.md", f"# Melanie\n## Camping\n{chat}\n## Pottery\n- Made a bowl.\n")
    found.append(record(1, words=2000))
    found.append(Record("x", "entry", "d", "notes/d.md", ("Tokyo",), 1, 1, "東京の天気は晴れ。" * 40, "1"))
    found.append(Record("y", "entry", "d", "d.md", (), 1, 1, "x", "1", extra=(("when", "2026-05-01"),) * 4))
    assert any(r.kind == "partition" and len(r.seqs) >= 30 for r in found)
    for each in found:
        ratio = stored_record_bytes(record_data(each), each) / record_bytes(each)
        assert 0.8 <= ratio <= 1.5, (each.rid, ratio)  # over rather than under: the budget holds
