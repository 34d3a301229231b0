"""The tantivy index backend: the same answers as Whoosh, chosen in config, self-repairing."""

from __future__ import annotations

import json
import shutil
import sys
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memd.core.settings import spec_for
from memd.index import Filters, IndexStore
from memd.index.backends import BACKENDS, SUGGEST_TANTIVY_RECORDS, describe_index
from memd.index.records import records_for
from memd.index.retrieve import query_terms, retrieve
from memd.vault.vault import Vault

pytest.importorskip("tantivy")
from memd.index import tantivy_backend  # only where tantivy is installed

TRAVEL = """\
---
id: travel
summary: "trips and plans"
---
# Trips
- <seq=1,time=2023-05-08T13:56,source=user> Went camping at the lake with Melanie and the kids.
- <seq=2,time=2023-05-08T14:01,source=user> Melanie loved the campfire stories.
- <seq=3,time=2023-06-02T10:00,source=import:chat,when=2023-06-01> Hiked the ridge trail yesterday, saw eagles.
# Plans
## Summer
- <seq=4,time=2023-07-15T09:00,source=user> Planning a road trip to the coast in August.
Some prose about travel budgets and the coast road.
"""
HOBBIES = """\
---
id: hobbies
summary: "pottery and painting"
---
# Pottery
- <seq=5,time=2023-06-20T18:00,source=user> Pottery class made a blue vase for the kitchen.
- <seq=6,time=2023-06-21T18:00,source=import:chat> Painted a sunset over the lake.
- <seq=7,time=2023-09-01T08:00,source=user> Joined a mentorship program for young artists.
"""
QUERIES = (
    "camping at the lake",
    "what did Melanie love?",
    "pottery vase kitchen",
    "road trip coast",
    "mentorship program",
    "sunset painting lake",
    "eagles ridge",
)


def fill(vault: Vault) -> None:
    (vault.topics_dir / "travel.md").write_text(TRAVEL, encoding="utf-8")
    (vault.topics_dir / "hobbies.md").write_text(HOBBIES, encoding="utf-8")


def set_backend(memd, name: str) -> None:
    memd("config", "set", "index.backend", name)


@pytest.fixture(autouse=True)
def words_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backends are about words: no sentence model to load in these tests."""
    monkeypatch.setenv("MEMD_EMBEDDING", "none")


@pytest.fixture
def pair(tmp_path: Path, vault: Vault) -> tuple[IndexStore, IndexStore]:
    """The same vault indexed by each backend (two copies: each keeps one index)."""
    fill(vault)
    copy = Vault(tmp_path / "copy")
    shutil.copytree(vault.root, copy.root)
    whoosh, tantivy = IndexStore(vault, "whoosh"), IndexStore(copy, "tantivy")
    whoosh.sync()
    tantivy.sync()
    yield whoosh, tantivy
    whoosh.close()
    tantivy.close()


def test_the_setting_offers_exactly_the_registered_backends() -> None:
    spec = spec_for("index.backend")
    assert spec.choices == ("auto", *BACKENDS) and spec.default == "auto" and spec.env == "MEMD_INDEX_BACKEND"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
def test_analysis_matches_whoosh_for_any_text(text: str) -> None:
    from memd.index.whoosh_backend import _analyzer

    assert tantivy_backend.analyse(text) == [token.text for token in _analyzer()(text)]


def test_the_stopwords_are_whooshs_own() -> None:
    from whoosh.analysis import STOP_WORDS

    from memd.index.analysis import STOP_WORDS as ours

    assert ours == STOP_WORDS
    text = "the cats and the hat"
    assert tantivy_backend.analyse(text) == ["cat", "hat"]


def test_context_field_matches_whoosh(tmp_path: Path) -> None:
    from memd.index.whoosh_backend import WhooshBackend

    whoosh = WhooshBackend(tmp_path / "w", create=True)
    for record in records_for("topics/travel.md", TRAVEL):
        assert tantivy_backend.context_text(record) == whoosh._fields(record)["context"]


def test_same_ranking_filters_lookups_and_idf_as_whoosh(pair: tuple[IndexStore, IndexStore]) -> None:
    whoosh, tantivy = (store.backend() for store in pair)
    assert whoosh.count() == tantivy.count() > 0
    for word in ("lake", "melani", "pottery", "absent"):
        assert tantivy.idf(word) == pytest.approx(whoosh.idf(word))
    for query in QUERIES:
        terms = query_terms(whoosh, query)
        assert terms == query_terms(tantivy, query)
        expected = whoosh.search(terms, 20, Filters())
        got = tantivy.search(terms, 20, Filters())
        assert [h.record.rid for h in got[:3]] == [h.record.rid for h in expected[:3]], query
        assert {h.record.rid for h in got} == {h.record.rid for h in expected}
        for a, b in zip(expected, got, strict=True):
            assert b.score == pytest.approx(a.score, rel=0.05)
        assert [r.record.rid for r in retrieve(tantivy, query, 5)] == [r.record.rid for r in retrieve(whoosh, query, 5)]
    terms = query_terms(whoosh, "lake coast vase trip camping")
    for filters in (
        Filters(source="import:chat"),
        Filters(kind="partition"),
        Filters(doc="hobbies"),
        Filters(since=datetime(2023, 6, 1), until=datetime(2023, 6, 30, 23, 59)),
        Filters(since=datetime(2023, 7, 1)),
        Filters(until=datetime(2023, 5, 31), kind="entry"),
    ):
        expected = {h.record.rid for h in whoosh.search(terms, 50, filters)}
        assert {h.record.rid for h in tantivy.search(terms, 50, filters)} == expected, filters
    # The ridge hike was written on June 2nd about "yesterday" (when=2023-06-01): June 1st finds it.
    june1 = Filters(since=datetime(2023, 6, 1), until=datetime(2023, 6, 1, 23, 59))
    assert [h.record.seq for h in tantivy.search(query_terms(tantivy, "ridge"), 5, june1)] == ["3"]
    assert [r.rid for r in tantivy.by_seq([2, 5, 99])] == [r.rid for r in whoosh.by_seq([2, 5, 99])]
    assert {r.seqs for r in tantivy.by_seq([2, 5, 99])} == {(2,), (5,)}
    rids = ["topics/travel.md#L6", "topics/hobbies.md#L7", "nope#L1"]
    assert tantivy.get(rids) == whoosh.get(rids) and len(tantivy.get(rids)) == 2


def test_switching_backend_in_config_rebuilds_and_search_still_answers(vault: Vault, memd) -> None:
    fill(vault)
    set_backend(memd, "whoosh")
    assert "camping" in memd("search", "camping lake").output
    assert (vault.index_dir / "whoosh").is_dir()
    set_backend(memd, "tantivy")
    report = IndexStore(Vault(vault.root)).sync()
    assert report.rebuilt
    manifest = json.loads((vault.index_dir / "manifest.json").read_text())
    assert manifest["engine"] == "tantivy"
    assert (vault.index_dir / "tantivy").is_dir() and not (vault.index_dir / "whoosh").exists()
    assert "camping" in memd("search", "camping lake").output
    assert "tantivy" in memd("status").output
    # And back: the manifest says tantivy built it, so Whoosh rebuilds rather than trusting it.
    report = IndexStore(Vault(vault.root), "whoosh").sync()
    assert report.rebuilt and not (vault.index_dir / "tantivy").exists()


def test_hand_edit_reaches_the_tantivy_index(vault: Vault, memd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_INDEX_BACKEND", "tantivy")
    fill(vault)
    assert "xylophone" not in memd("search", "xylophone").output
    path = vault.topics_dir / "hobbies.md"
    path.write_text(HOBBIES + "- <seq=8,time=2023-10-01T08:00,source=user> Bought a xylophone.\n", encoding="utf-8")
    report = IndexStore(Vault(vault.root)).sync()
    assert report.updated == ("topics/hobbies.md",) and not report.rebuilt
    assert "Bought a xylophone" in memd("search", "xylophone").output
    path.write_text(HOBBIES.replace("blue vase", "green bowl"), encoding="utf-8")
    out = memd("search", "vase", "--json").output
    assert "blue vase" not in out
    assert "green bowl" in memd("search", "bowl").output


def test_damaged_tantivy_folder_is_rebuilt(vault: Vault, memd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_INDEX_BACKEND", "tantivy")
    fill(vault)
    memd("search", "camping")
    folder = vault.index_dir / "tantivy"
    for path in folder.glob("*.*"):
        if path.suffix not in (".json", ".lock"):  # segment files only: tantivy panics on these
            path.write_bytes(b"\x00garbage")
    assert "camping" in memd("search", "camping lake").output
    for path in folder.iterdir():
        if path.is_file():
            path.write_bytes(b"\x00garbage")
    assert "camping" in memd("search", "camping lake").output
    shutil.rmtree(folder)
    assert "pottery" in memd("search", "pottery").output.lower()
    (folder / tantivy_backend.META).write_text('{"version": 1, "state": "repad"}')  # a re-pad cut short
    report = IndexStore(Vault(vault.root)).sync()
    assert report.rebuilt


def test_padding_follows_the_vault_as_it_grows(tmp_path: Path) -> None:
    """b stays Whoosh's 0.4 however the mean entry length moves: records are re-padded when it strays."""
    backend = tantivy_backend.TantivyBackend(tmp_path / "t", create=True)
    short = records_for("a.md", "".join(f"- <seq={n},source=user> tea {n}\n" for n in range(1, 30)))
    backend.replace_files((), short)
    first = dict(backend.stats.pads)
    words = " ".join(f"word{i}" for i in range(60))
    long = records_for("b.md", "".join(f"- <seq={n},source=user> coffee {words}\n" for n in range(100, 160)))
    backend.replace_files((), long)
    assert backend.stats.pads["text"] > first["text"] and not backend.stats.drifted()
    assert backend.count() == len(short) + len(long)
    assert len(backend.search([("tea", 1.0)], 100, Filters(kind="entry"))) == 29  # re-padded, all still found
    backend.replace_files(["b.md"], [])
    assert backend.count() == len(short) and not backend.stats.drifted()
    assert backend.stats.pads == first
    backend.close()
    reopened = tantivy_backend.TantivyBackend(tmp_path / "t")
    assert reopened.stats.pads == first and reopened.count() == len(short)


def test_a_new_index_stores_records_in_small_blocks_and_reads_them_back(tmp_path: Path) -> None:
    backend = tantivy_backend.TantivyBackend(tmp_path / "t", create=True)
    settings = json.loads((tmp_path / "t" / "meta.json").read_text(encoding="utf-8"))["index_settings"]
    assert settings["docstore_blocksize"] == tantivy_backend._DOC_BLOCK_BYTES < 16384
    records = records_for(
        "a.md", "".join(f"- <seq={n},source=user> tea number {n} {'x' * 200}\n" for n in range(1, 80))
    )
    backend.replace_files((), records)
    backend.close()
    reopened = tantivy_backend.TantivyBackend(tmp_path / "t")  # the setting outlives the process that made it
    assert json.loads((tmp_path / "t" / "meta.json").read_text(encoding="utf-8"))["index_settings"] == settings
    found = {hit.record for hit in reopened.search([("tea", 1.0)], 200, Filters())}
    assert found == set(records) and len(records) > 79
    assert reopened.by_seq([40])[0].text.startswith("tea number 40 ")


def test_an_index_meta_of_another_shape_keeps_tantivys_block_size(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "meta.json").write_text('{"index_settings": "unexpected"}', encoding="utf-8")
    tantivy_backend._small_doc_blocks(folder)  # a later tantivy's meta.json: left as it is
    assert (folder / "meta.json").read_text(encoding="utf-8") == '{"index_settings": "unexpected"}'


def test_a_stopped_writer_is_read_as_the_failure_it_most_likely_met(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tantivy names no cause when its writer stops; the one-line message names the likely one."""
    import errno
    import resource
    import shutil
    from types import SimpleNamespace

    stopped = ValueError("An index writer was killed.. (io::Error most likely)")
    unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (20_000, 20_000))
    assert tantivy_backend._writer_stopped(tmp_path, stopped).errno == errno.EFBIG
    monkeypatch.setattr(resource, "getrlimit", lambda which: unlimited)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: SimpleNamespace(free=4096))
    assert tantivy_backend._writer_stopped(tmp_path, stopped).errno == errno.ENOSPC
    monkeypatch.setattr(shutil, "disk_usage", lambda path: SimpleNamespace(free=10**12))
    other = tantivy_backend._writer_stopped(tmp_path, stopped)
    assert other.errno == errno.EIO and "io::Error" in str(other)


def test_a_merge_that_fails_after_the_commit_loses_nothing(tmp_path: Path) -> None:
    """A background merge that cannot write (a full disk) leaves valid segments: the write stands."""

    class FailingMerges:
        def __init__(self, writer: object) -> None:
            self.writer = writer

        def wait_merging_threads(self) -> None:
            self.writer.wait_merging_threads()  # type: ignore[attr-defined]
            raise ValueError("An error occurred in a thread: a merge could not be written")

        def __getattr__(self, name: str) -> object:
            return getattr(self.writer, name)

    class Index:
        def __init__(self, index: object) -> None:
            self.index = index

        def writer(self, *args: object) -> FailingMerges:
            return FailingMerges(self.index.writer(*args))  # type: ignore[attr-defined]

        def __getattr__(self, name: str) -> object:
            return getattr(self.index, name)

    backend = tantivy_backend.TantivyBackend(tmp_path / "t", create=True)
    backend.index = Index(backend.index)
    records = records_for("a.md", "".join(f"- <seq={n},source=user> tea number {n}\n" for n in range(1, 30)))
    backend.replace_files((), records)
    assert backend.count() == len(records) and backend.by_seq([7])[0].text == "tea number 7"
    backend.close()
    assert tantivy_backend.TantivyBackend(tmp_path / "t").count() == len(records)


def test_missing_tantivy_package_is_one_clear_line(vault: Vault, memd, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(vault)
    set_backend(memd, "tantivy")
    monkeypatch.setitem(sys.modules, "tantivy", None)  # as if not installed
    result = memd("search", "camping", ok=False)
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "pip install 'memd[tantivy]'" in result.output and len(result.output.strip().splitlines()) == 1
    status = memd("status")
    assert "pip install 'memd[tantivy]'" in status.output


def test_auto_uses_whoosh_where_tantivy_is_not_installed(vault: Vault, memd, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(vault)
    monkeypatch.setitem(sys.modules, "tantivy", None)  # as if not installed
    assert "camping" in memd("search", "camping lake").output
    assert (vault.index_dir / "whoosh").is_dir() and "whoosh" in memd("status").output
    monkeypatch.delitem(sys.modules, "tantivy")  # installed later: the next search rebuilds in tantivy
    assert "camping" in memd("search", "camping lake").output
    assert (vault.index_dir / "tantivy").is_dir() and not (vault.index_dir / "whoosh").exists()


def test_status_suggests_tantivy_for_a_large_whoosh_vault(vault: Vault, memd) -> None:
    manifest = vault.index_dir / "manifest.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"version": 6, "engine": "whoosh", "records": SUGGEST_TANTIVY_RECORDS + 1}))
    assert describe_index(vault.index_dir, "whoosh")["suggestion"]
    assert "tantivy" in memd("status").output
    assert describe_index(vault.index_dir, "tantivy")["suggestion"] is None
    manifest.write_text(json.dumps({"version": 6, "engine": "whoosh", "records": 500}))
    assert describe_index(vault.index_dir, "whoosh")["suggestion"] is None


def test_eval_runs_on_the_chosen_backend(tmp_path: Path, memd) -> None:
    from tests.test_eval import conversation

    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([conversation()]))
    runs = {
        name: json.loads(memd("eval", "locomo", str(path), "--no-consolidate", "--backend", name, "--json").output)
        for name in ("whoosh", "tantivy")
    }
    assert runs["tantivy"]["index_backend"] == "tantivy" and runs["whoosh"]["index_backend"] == "whoosh"
    assert runs["tantivy"]["recall"] == runs["whoosh"]["recall"]
    assert "index tantivy" in memd("eval", "locomo", str(path), "--no-consolidate", "--backend", "tantivy").output
