"""Search by meaning: the packaged sentence model, vectors as a derived index, lexical-only fallback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memd.index import IndexStore, embedding, minilm
from memd.index.embedding import embed_many, embed_query, load_embedder
from memd.index.minilm import WEIGHTS_SHA256, check_weights
from memd.index.model_files import ModelUnavailable, minilm_folder
from memd.index.segment import Segment
from memd.index.vectors import VectorIndex
from memd.vault.vault import Vault

NOTES = """\
---
id: life
summary: "things that happened"
---
# Sport
- <seq=1,time=2026-03-01T09:00,source=user> Bought a second-hand road bike for the spring rides.
- <seq=2,time=2026-03-02T09:00,source=user> Knee hurts after the long run on Sunday.
# Food
- <seq=3,time=2026-03-03T09:00,source=user> Allergic to peanuts; carries an epipen.
- <seq=4,time=2026-03-04T09:00,source=user> Learning to bake sourdough with a new starter.
"""


@pytest.fixture
def life(vault: Vault) -> Vault:
    (vault.topics_dir / "life.md").write_text(NOTES, encoding="utf-8")
    return vault


def search(memd, query: str) -> list[dict]:
    return json.loads(memd("search", query, "--json").output)


def stored(vault: Vault) -> VectorIndex:
    """The vault's vectors, as a search reads them (the base and later segments)."""
    return VectorIndex.load(vault.index_dir, "minilm-l6", 384)


def base(vault: Vault) -> Segment:
    """The base segment, ``vectors.npz``: all of the vectors once a build is complete and compacted."""
    return Segment.load(vault.index_dir / "vectors.npz", "minilm-l6", 384)


def write_older_format(vault: Vault, index: Segment, version: int, vectors: np.ndarray) -> None:
    """The vault's vector file as an older memd wrote it: records' vectors only, no sentences."""
    np.savez(
        vault.index_dir / "vectors.npz",
        meta=np.array(json.dumps({"format": version, "model": "minilm-l6", "files": index.files})),
        rids=np.array(index.rids),
        keys=np.array(index.keys, dtype="S20"),
        vectors=vectors,
    )


def test_the_packaged_model_gives_the_published_sentence_vectors() -> None:
    model = load_embedder("minilm-l6")
    vector = model.embed(["This is an example sentence"])[0]
    # sentence-transformers/all-MiniLM-L6-v2's own output for this sentence (first four of 384).
    assert np.allclose(vector[:4], [0.0676569, 0.0634959, 0.0487131, 0.0793050], atol=2e-4)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_parallel_embedding_gives_the_same_vectors() -> None:
    model = load_embedder("minilm-l6")
    texts = [f"note number {i} about {word}" for i, word in enumerate(["tea", "bikes", "rain", "jazz"] * 70)]
    assert np.allclose(embed_many(model, texts, workers=2), model.embed(texts), atol=1e-5)


def test_search_finds_an_entry_by_meaning_without_shared_words(life: Vault, memd) -> None:
    found = search(memd, "cycling")
    assert found[0]["text"].startswith("Bought a second-hand road bike")
    assert found[0]["via"] == "meaning"
    assert search(memd, "nut allergy")[0]["text"].startswith("Allergic to peanuts")
    first, snippet = memd("search", "cycling").output.splitlines()[:2]
    assert first.endswith("(via meaning)") and "road bike" in snippet


def test_status_says_which_retrieval_is_active(life: Vault, memd) -> None:
    data = json.loads(memd("status", "--json").output)
    assert data["retrieval"]["mode"] == "hybrid" and data["retrieval"]["model"] == "minilm-l6"
    assert "retrieval   hybrid" in memd("status").output


def test_a_hand_edit_re_embeds_only_the_changed_entry(life: Vault) -> None:
    store = IndexStore(life)
    assert store.sync().embedded == 4
    path = life.topics_dir / "life.md"
    path.write_text(path.read_text().replace("sourdough with a new starter", "rye bread at home"), encoding="utf-8")
    report = store.sync()
    assert report.embedded == 1 and report.updated == ("topics/life.md",)
    rids = [rid for rid, _ in store.backend().similar("baking bread").top(1)]  # type: ignore[attr-defined]
    assert store.backend().get(rids)[rids[0]].text == "Learning to bake rye bread at home."
    store.close()


def test_switching_the_index_backend_re_embeds_nothing(life: Vault, memd) -> None:
    memd("config", "set", "index.backend", "whoosh")
    whoosh = IndexStore(Vault(life.root))
    assert whoosh.sync().embedded == 4
    whoosh.close()
    memd("config", "set", "index.backend", "tantivy")
    tantivy = IndexStore(Vault(life.root))
    report = tantivy.sync()
    assert report.rebuilt and report.embedded == 0
    assert [h["text"] for h in search(memd, "baking bread")][:1] == ["Learning to bake sourdough with a new starter."]
    tantivy.close()


def test_moving_entries_between_files_re_embeds_nothing(life: Vault) -> None:
    store = IndexStore(life)
    store.sync()
    text = (life.topics_dir / "life.md").read_text()
    (life.topics_dir / "life.md").unlink()
    (life.topics_dir / "renamed.md").write_text(text.replace("id: life", "id: renamed"), encoding="utf-8")
    report = store.sync()
    assert report.embedded == 0
    assert {rid.split("#")[0] for rid in stored(life).rids} == {"topics/renamed.md"}
    store.close()


def test_reindex_rebuilds_vectors_from_the_files_alone(life: Vault, memd) -> None:
    search(memd, "cycling")
    shutil.rmtree(life.index_dir)
    out = memd("reindex").output
    assert "records" in out
    assert len(stored(life)) == 4
    assert search(memd, "cycling")[0]["via"] == "meaning"


def test_a_damaged_vector_file_is_rebuilt(life: Vault, memd) -> None:
    search(memd, "cycling")
    vectors = life.index_dir / "vectors.npz"
    vectors.write_bytes(b"PK\x03\x04 this is not a zip archive any more")
    assert search(memd, "cycling")[0]["text"].startswith("Bought a second-hand road bike")
    assert len(stored(life)) == 4 and not stored(life).damaged


def test_vectors_of_another_shape_are_rebuilt(life: Vault, memd) -> None:
    search(memd, "cycling")
    index = base(life)
    index.matrix = index.matrix[:, :100]
    index.save()
    assert base(life).damaged
    assert search(memd, "cycling")[0]["via"] == "meaning"
    assert base(life).matrix.shape == (4, 384)


def test_a_vector_file_cut_short_is_rebuilt(life: Vault, memd) -> None:
    search(memd, "cycling")
    vectors = life.index_dir / "vectors.npz"
    vectors.write_bytes(vectors.read_bytes()[:-2000])  # the end of the matrix and the archive's directory
    assert base(life).damaged
    assert search(memd, "cycling")[0]["via"] == "meaning"
    assert len(base(life)) == 4 and not base(life).damaged


def test_a_vector_file_holding_a_nan_is_rebuilt(life: Vault, memd) -> None:
    search(memd, "cycling")
    index = base(life)
    index.matrix = np.array(index.matrix)
    index.matrix[2, 7] = np.nan
    index.save()
    assert base(life).damaged
    assert search(memd, "cycling")[0]["via"] == "meaning"
    assert np.isfinite(base(life).matrix).all()


def test_stored_vectors_are_read_in_place_and_stay_a_plain_npz(life: Vault, memd) -> None:
    search(memd, "cycling")
    index = base(life)
    # Mapped from the file (no copy), aligned so numpy's BLAS takes it as it is.
    assert not index.matrix.flags.owndata and index.matrix.flags.aligned and not index.outdated
    assert np.allclose(np.linalg.norm(index.matrix, axis=1), 1.0, atol=1e-5)
    with np.load(life.index_dir / "vectors.npz") as data:
        assert np.array_equal(data["vectors"], index.matrix) and data["rids"].tolist() == index.rids


def test_vectors_in_the_older_half_precision_format_are_kept_and_rewritten(life: Vault, memd) -> None:
    search(memd, "cycling")
    index = base(life)
    original = np.array(index.matrix)  # np.savez rewrites the file in place, under the mapping
    write_older_format(life, index, 1, original.astype(np.float16))
    old = base(life)
    assert old.outdated and not old.damaged and len(old) == 4
    store = IndexStore(life)
    assert store.sync().embedded == 0  # rewritten from the stored vectors, none embedded again
    store.close()
    new = base(life)
    assert not new.outdated and new.rids == index.rids and not new.matrix.flags.owndata
    assert np.allclose(new.matrix, original, atol=1e-3)
    assert search(memd, "cycling")[0]["via"] == "meaning"


def test_a_repeated_query_is_embedded_once() -> None:
    model = load_embedder("minilm-l6")
    seen: list[list[str]] = []

    class Counting:
        name, dim = model.name, model.dim

        def embed(self, texts: list[str]) -> np.ndarray:
            seen.append(list(texts))
            return model.embed(texts)  # type: ignore[no-any-return]

        def knows(self, word: str) -> bool:
            return model.knows(word)

    counting = Counting()
    first = embed_query(counting, "where did I park the car")
    again = embed_query(counting, "where did I park the car")
    other = embed_query(counting, "what did the vet say")
    assert seen == [["where did I park the car"], ["what did the vet say"]]
    assert again is first and not first.flags.writeable  # shared, so nobody may change it
    assert np.array_equal(first, model.embed(["where did I park the car"])[0]) and not np.array_equal(first, other)


def test_the_weights_are_hashed_once_until_the_file_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights = tmp_path / "model.safetensors"
    shutil.copyfile(minilm_folder() / "model.safetensors", weights)
    note = tmp_path / "cache" / "checked"
    check_weights(weights, note)
    assert note.read_text().startswith(WEIGHTS_SHA256)

    def no_hashing(*_: object) -> None:
        raise AssertionError("hashed again")

    with monkeypatch.context() as patch:
        patch.setattr(minilm.hashlib, "sha256", no_hashing)
        check_weights(weights, note)  # the same file: the note vouches for it
    with weights.open("r+b") as handle:  # another file of the same size
        handle.seek(5_000_000)
        byte = handle.read(1)
        handle.seek(5_000_000)
        handle.write(bytes([byte[0] ^ 1]))
    with pytest.raises(ModelUnavailable, match="checksum differs"):
        check_weights(weights, note)


def test_installs_sharing_a_cache_folder_hash_their_weights_once_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installs = []
    for name in ("one", "two"):  # two environments on one machine, one user's cache folder
        folder = tmp_path / name
        folder.mkdir()
        for file in ("model.safetensors", "tokenizer.json"):
            shutil.copyfile(minilm_folder() / file, folder / file)
        installs.append(folder)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    hashed: list[int] = []
    sha256 = minilm.hashlib.sha256

    def counted(data: bytes) -> object:
        hashed.append(len(data))
        return sha256(data)

    monkeypatch.setattr(minilm.hashlib, "sha256", counted)
    for _ in range(3):  # processes of either install, taking turns
        for folder in installs:
            monkeypatch.setenv("MEMD_MINILM_DIR", str(folder))
            embedding._minilm()
    assert len(hashed) == 2  # each install's weights once, then its own note vouches for them
    notes = sorted((tmp_path / "cache" / "memd").glob("*.checked"))
    assert len(notes) == 2
    assert {note.read_text().split()[-1] for note in notes} == {str(f / "model.safetensors") for f in installs}


def test_without_the_model_search_is_lexical_and_status_says_why(
    life: Vault, memd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-model"
    empty.mkdir()
    monkeypatch.setenv("MEMD_MINILM_DIR", str(empty))
    data = json.loads(memd("status", "--json").output)
    assert data["retrieval"]["mode"] == "lexical"
    assert "lexical: words only" in memd("status").output
    assert search(memd, "cycling") == []
    assert search(memd, "peanuts")[0]["text"].startswith("Allergic to peanuts")
    assert not (life.index_dir / "vectors.npz").exists()


def test_semantic_retrieval_can_be_turned_off(life: Vault, memd) -> None:
    memd("config", "set", "index.embedding", "none")
    assert json.loads(memd("status", "--json").output)["retrieval"]["mode"] == "lexical"
    assert search(memd, "peanuts")[0]["via"] == "match"
    assert not (life.index_dir / "vectors.npz").exists()


def test_adding_an_entry_embeds_nothing(vault: Vault, memd) -> None:
    memd("add", "Moved into the new flat on Friday, finally unpacked")
    assert not (vault.index_dir / "vectors.npz").exists()
    # The first search indexes the entry, vectors included.
    assert search(memd, "relocating home")[0]["text"] == "Moved into the new flat on Friday, finally unpacked"
    assert len(stored(vault)) == 1


def test_filters_apply_to_entries_found_by_meaning(life: Vault, memd) -> None:
    found = json.loads(memd("search", "cycling", "--since", "2026-03-03", "--json").output)
    assert all(hit["time"] >= "2026-03-03" for hit in found)


def test_a_vault_with_nothing_indexed_finds_nothing(vault: Vault, memd) -> None:
    assert search(memd, "anything at all") == []
    memd("add", "Bought a second-hand road bike")
    assert search(memd, "cycling")[0]["via"] == "meaning"


TALK = """\
---
id: talk
summary: "a chat"
---
# Weekend
- <seq=1,time=2026-03-01T09:00,source=chat> Ana: Busy week at work. We took the kids camping on Saturday. How are you?
- <seq=2,time=2026-03-01T09:01,source=chat> Ben: Good, thanks!
"""


@pytest.fixture
def talk(vault: Vault) -> Vault:
    (vault.topics_dir / "talk.md").write_text(TALK, encoding="utf-8")
    return vault


def test_a_record_of_several_sentences_gets_a_vector_per_sentence(talk: Vault) -> None:
    store = IndexStore(talk)
    assert store.sync().embedded == 2 + 3  # two records, and the three sentences of the first
    index = base(talk)
    assert index.part_rows.tolist() == [index.row("topics/talk.md#L6")] * 3
    query = "a camping trip with the children"
    similar = store.backend().similar(query)  # type: ignore[attr-defined]
    (whole, single), (lifted, same) = (
        similar.of_records(["topics/talk.md#L6", "topics/talk.md#L7"], share) for share in (0, 0.3)
    )
    best = index.best_parts([index.row("topics/talk.md#L6")], store.backend().query_vector(query))[0]  # type: ignore[attr-defined]
    # The camping sentence is closer to the question than the record as a whole, and part of its lead counts.
    assert best > whole
    assert lifted == pytest.approx(whole + 0.3 * (best - whole))
    assert same == single  # one sentence: nothing to add
    assert similar.of_records(["topics/nowhere.md#L1"], 0.3) == [None]
    store.close()


def test_editing_one_sentence_embeds_that_sentence_and_its_record_only(talk: Vault) -> None:
    store = IndexStore(talk)
    store.sync()
    path = talk.topics_dir / "talk.md"
    path.write_text(path.read_text().replace("How are you?", "And you two?"), encoding="utf-8")
    assert store.sync().embedded == 2
    assert len(base(talk).part_rows) == 3
    store.close()


def test_vectors_stored_before_sentences_are_kept_and_the_sentences_added(talk: Vault, memd) -> None:
    store = IndexStore(talk)
    store.sync()
    store.close()
    index = base(talk)
    original = np.array(index.matrix)
    write_older_format(talk, index, 2, original)
    assert len(base(talk).part_rows) == 0 and not base(talk).damaged
    store = IndexStore(talk)
    assert store.sync().embedded == 3  # the sentences; the records' own vectors are kept
    store.close()
    assert len(base(talk).part_rows) == 3 and np.allclose(base(talk).matrix, original)


def test_sentence_vectors_that_do_not_fit_their_records_are_rebuilt(talk: Vault, memd) -> None:
    search(memd, "camping")
    index = base(talk)
    index.part_rows = np.array([0, 0, 7], dtype=np.int32)  # a row past the last record
    index.save()
    assert base(talk).damaged
    assert search(memd, "camping")[0]["text"].startswith("Ana: Busy week")
    assert base(talk).part_rows.tolist() == [0, 0, 0] and not base(talk).damaged


def test_an_older_vector_file_keeps_no_rows_of_a_file_deleted_before_the_upgrade(talk: Vault) -> None:
    (talk.topics_dir / "more.md").write_text(TALK.replace("id: talk", "id: more"), encoding="utf-8")
    store = IndexStore(talk)
    store.sync()
    store.close()
    index = base(talk)
    write_older_format(talk, index, 2, np.array(index.matrix))
    (talk.topics_dir / "more.md").unlink()
    store = IndexStore(talk)
    store.sync()
    store.close()
    assert {rid.split("#")[0] for rid in base(talk).rids} == {"topics/talk.md"}


def test_status_says_how_many_vectors_there_are_and_which_files_wait(
    life: Vault, memd, monkeypatch: pytest.MonkeyPatch
) -> None:
    def index_line() -> str:
        return next(line for line in memd("status").output.splitlines() if line.startswith("index"))

    assert index_line() == "index       tantivy, not built yet"
    search(memd, "cycling")
    assert index_line() == "index       tantivy, 6 records; 4 vectors"  # one per entry; none for sections of entries
    (life.root / "notes.md").write_text("# Plans\nA walk along the coast in May.\n", encoding="utf-8")
    (life.index_dir / "vectors.npz").unlink()
    assert "no vectors yet (embedded at the next search or by the daemon)" in index_line()
    search(memd, "cycling")
    (life.root / "more.md").write_text("# More\nA swim in the lake.\n", encoding="utf-8")
    with monkeypatch.context() as words_only:  # the new file is indexed, not embedded
        words_only.setenv("MEMD_EMBEDDING", "none")
        memd("search", "swim")
    assert index_line().endswith("; 5 vectors, 1 of 4 files not embedded yet (at the next search or by the daemon)")
    data = json.loads(memd("status", "--json").output)
    assert "1 of 4 files not embedded yet" in data["index"]["summary"]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: BLAS runs on one thread anyway")
def test_one_blas_thread_holds_when_asked_for_before_numpy_is_imported() -> None:
    # embedding.py imports no numpy: a process may ask for one BLAS thread first.
    code = (
        "from memd.index.embedding import one_blas_thread_from_now\n"
        "one_blas_thread_from_now()\n"
        "import numpy\n"
        "from threadpoolctl import threadpool_info\n"
        "print(max(lib['num_threads'] for lib in threadpool_info() if lib['user_api'] == 'blas'))\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.endswith("_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "1"


def test_a_search_while_a_reindex_builds_vectors_answers_from_the_words_without_waiting(
    life: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from memd.app.memory import Memory
    from memd.core.lock import vault_lock

    for path in life.root.rglob("*.md"):  # written an hour ago, as the files of a vault being reindexed
        os.utime(path, (path.stat().st_mtime - 3600, path.stat().st_mtime - 3600))
    IndexStore(life).sync(seconds=0.0)  # the words in step, no vector laid: as a reindex leaves them mid-way
    monkeypatch.setenv("MEMD_LOCK_TIMEOUT", "1")
    taken, done = threading.Event(), threading.Event()

    def writer() -> None:  # another holder of the index lock: a reindex embedding its next slice
        with vault_lock(life.index_dir / "lock", 5.0):
            taken.set()
            done.wait(120)

    holder = threading.Thread(target=writer)
    holder.start()
    try:
        assert taken.wait(30)
        found = Memory(life).search("peanuts", embed_seconds=1.0)
    finally:
        done.set()
        holder.join()
    assert found.results and "epipen" in found.results[0]["text"]
    assert found.vectors is not None and found.vectors[0] < found.vectors[1]  # how far the vectors are
    assert found.note is not None and found.building  # and it says so, and that another process builds them
