"""Vectors kept in segments: a build that streams and resumes, edits that write what they touch,
and searches that answer from words while the vectors are still being built."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memd.app import Memory
from memd.index import IndexStore, embedding, vectors
from memd.index.records import Record, records_for
from memd.index.sentences import sentences
from memd.index.vectors import VectorIndex
from memd.vault.vault import Vault

pytest.importorskip("numpy")
if embedding.unavailable("minilm-l6"):
    pytest.skip("the embedding model is not installed", allow_module_level=True)

ENTRIES = 120  # per topic, three topics: enough for several chunks of CHUNK


def topic(name: str, first: int) -> str:
    lines = [f"---\nid: {name}\nsummary: {name}\n---\n# Notes"]
    for n in range(ENTRIES):
        seq = first + n
        words = " ".join(f"w{(seq * 7 + k) % 97}" for k in range(3 + seq % 11))
        lines.append(f"- <seq={seq},time=2026-03-01T09:00,source=user> {name} note {seq}: {words}.")
    return "\n".join(lines) + "\n"


@pytest.fixture
def big(vault: Vault) -> Vault:
    for i, name in enumerate(("garden", "travel", "work")):
        (vault.topics_dir / f"{name}.md").write_text(topic(name, 1 + i * ENTRIES), encoding="utf-8")
    return vault


class Counting:
    """The embedding seam, counting every text the model reads."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.texts: list[str] = []
        real = embedding.embed_many

        def counted(model: Any, texts: Sequence[str], workers: int | None = None) -> Any:
            self.texts.extend(texts)
            return real(model, texts, workers)

        monkeypatch.setattr(embedding, "embed_many", counted)


class Stop(Exception):
    """What a Ctrl-C or a crash is to the build: it ends mid-way."""


def stored(vault: Vault) -> VectorIndex:
    return VectorIndex.load(vault.index_dir, "minilm-l6", 384)


def segment_files(vault: Vault) -> list[Path]:
    return sorted((vault.index_dir / "vectors").glob("*.npz"))


def test_a_stopped_first_build_resumes_without_embedding_again(big: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "CHUNK_TEXTS", 40)
    counting = Counting(monkeypatch)
    seen: list[tuple[int, int]] = []

    def stop_after_three_chunks(done: int, total: int) -> None:
        seen.append((done, total))
        if len(seen) == 4:  # the first call says 0 done
            raise Stop

    store = IndexStore(big)
    with pytest.raises(Stop):
        store.sync(embedding=stop_after_three_chunks)
    store.close()
    first = list(counting.texts)
    assert seen[0] == (0, 3 * ENTRIES) and 0 < seen[-1][0] < 3 * ENTRIES  # counted in records
    kept = stored(big)
    assert len(kept) == seen[-1][0] and kept.stale({rel: s[0] for rel, s in kept.files.items()})
    assert len(segment_files(big)) == 3  # one segment per finished chunk, kept

    counting.texts.clear()
    store = IndexStore(big)
    report = store.sync()
    store.close()
    rest = list(counting.texts)
    # Only the rest was embedded: no text twice, and together every text once.
    assert not set(first) & set(rest)
    again = Counting(monkeypatch)
    (big.index_dir / "vectors.npz").unlink()
    fresh = IndexStore(big)
    fresh.sync()
    fresh.close()
    assert sorted(first + rest) == sorted(again.texts)
    assert report.embedded == len(rest)
    done = stored(big)
    assert len(done) == 3 * ENTRIES and not segment_files(big)  # complete: compacted into the base


def test_status_counts_vectors_in_records_while_a_build_is_stopped(
    big: Vault, memd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "CHUNK_TEXTS", 40)

    def stop(done: int, total: int) -> None:
        if done >= 100:
            raise Stop

    store = IndexStore(big)
    with pytest.raises(Stop):
        store.sync(embedding=stop)
    store.close()
    line = next(line for line in memd("status").output.splitlines() if line.startswith("index"))
    laid = len(stored(big))
    assert f"vectors {laid:,} / {3 * ENTRIES:,}, words-only search until done" in line


def test_a_hand_edit_embeds_and_writes_only_what_it_touched(big: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    store = IndexStore(big)
    store.sync()
    base = big.index_dir / "vectors.npz"
    before = base.stat()
    counting = Counting(monkeypatch)
    path = big.topics_dir / "travel.md"
    path.write_text(path.read_text().replace("travel note 130:", "travel note 130, by train:"), encoding="utf-8")
    report = store.sync()
    edited = record_at(path, "by train")
    text = vectors.vector_text(edited)
    # The edited entry's text and its sentences, nothing else.
    assert report.embedded == len(counting.texts) and text in counting.texts
    assert set(counting.texts) <= {text, *sentences(text)}
    # The base is not rewritten: one segment holds the edited file's rows.
    after = base.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)
    assert len(segment_files(big)) == 1
    index = stored(big)
    assert len(index) == 3 * ENTRIES and not index.stale({rel: s[0] for rel, s in index.files.items()})
    assert nearest(store, text) == edited.rid
    store.close()
    # Another process reads the same: the base plus the segment.
    other = IndexStore(big)
    assert other.sync().embedded == 0 and nearest(other, text) == edited.rid
    other.close()


def test_many_edits_are_merged_and_compacted_and_nothing_is_lost(big: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "MAX_SEGMENTS", 4)
    store = IndexStore(big)
    store.sync()
    path = big.topics_dir / "work.md"
    for n in range(12):
        path.write_text(path.read_text().replace(f"work note {241 + n}:", f"work note {241 + n} (edited):"))
        store.sync()
        assert len(segment_files(big)) <= 4 + 1
    store.close()
    index = stored(big)
    assert sorted(index.rids) == sorted(wanted_rids(big)) and len(index) == 3 * ENTRIES
    edited = record_at(path, "work note 245 (edited)")
    assert nearest(store, vectors.vector_text(edited)) == edited.rid


def wanted_rids(vault: Vault) -> list[str]:
    """The records that want a vector, read from the files themselves."""
    return [
        record.rid
        for path in sorted(vault.topics_dir.glob("*.md"))
        for record in records_for(vault.rel_of(path), path.read_text(encoding="utf-8"))
        if vectors.wants_vector(record)
    ]


def record_at(path: Path, words: str) -> Record:
    """The record of ``path`` whose text holds ``words``."""
    rel = path.relative_to(path.parents[1]).as_posix()
    return next(r for r in records_for(rel, path.read_text()) if r.kind == "entry" and words in r.text)


def nearest(store: IndexStore, text: str) -> str:
    """The record whose stored vector is closest to ``text``'s (its own, if it was stored right)."""
    return str(store.backend().similar(text).top(1)[0][0])  # type: ignore[attr-defined]


def test_a_search_while_vectors_are_missing_answers_by_words_and_says_so(big: Vault, memd, monkeypatch) -> None:
    memory = Memory(big)
    found = memory.search("garden note 7", embed_seconds=0)
    assert found.results and all(hit["via"] != "meaning" for hit in found.results)
    assert found.note == f"vectors 0 / {3 * ENTRIES:,}: ranked by words and the vectors built so far"
    assert found.to_json()["note"] == found.note
    assert not (big.index_dir / "vectors.npz").exists()  # nothing was embedded
    memory.close()

    from memd.app import reading

    monkeypatch.setattr(reading, "INTERACTIVE_EMBED_SECONDS", 0.0)  # the budget of a search made in its process
    result = memd("search", "garden note 7", "--json")
    assert json.loads(result.stdout)[0]["cite"].startswith("topics/garden.md")
    assert result.stderr.count("note: vectors 0 / 360") == 1
    assert "run `memd reindex` to build the rest" in result.stderr

    memory = Memory(big)
    whole = memory.search("garden note 7")  # no bound: the vectors are built first
    assert whole.note is None and whole.to_json().get("note") is None
    memory.close()


def test_a_search_with_a_time_bound_builds_part_and_the_next_goes_on(big: Vault, monkeypatch) -> None:
    monkeypatch.setattr(vectors, "SLICE_TEXTS", 16)
    counting = Counting(monkeypatch)
    memory = Memory(big)
    first = memory.search("garden", embed_seconds=1e-9)  # stops after its first chunk at most
    assert first.vectors is not None and first.vectors[0] <= 16 and first.vectors[1] == 3 * ENTRIES
    assert len(counting.texts) <= 16 + 10  # one chunk (a record's sentences come with it)
    spent = len(counting.texts)
    second = memory.search("garden", embed_seconds=0.5)
    assert second.vectors is None or second.vectors[0] > first.vectors[0]
    assert not set(counting.texts[:spent]) & set(counting.texts[spent:])
    memory.close()


def test_the_daemon_builds_missing_vectors_a_slice_at_a_time(big: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    from memd.daemon import core
    from memd.daemon.handler import Handler

    monkeypatch.setattr(core, "VECTOR_SLICE", 1e-9)  # one chunk a turn
    monkeypatch.setattr(vectors, "SLICE_TEXTS", 150)
    said: list[str] = []
    now = [1000.0]
    handler = Handler(big, clock=lambda: now[0], quiet=3.0, check_every=3600.0, rescan_every=3600.0, log=said.append)
    handler.start()  # indexes the words, and a first slice of vectors
    assert handler.vectors_behind is not None and 0 < handler.vectors_behind[0] < 3 * ENTRIES
    assert handler.next_deadline() <= now[0]  # the next slice is due at once
    turns = 0
    while handler.vectors_behind is not None and turns < 3 * ENTRIES:
        before = handler.vectors_behind[0]
        handler.run_due()
        turns += 1
        assert handler.vectors_behind is None or handler.vectors_behind[0] > before  # every turn gets further
    assert handler.vectors_behind is None and len(stored(big)) == 3 * ENTRIES
    assert said[0].startswith("vectors ") and said[-1] == "vectors complete"


TOPICS = 24  # past one chunk of texts (CHUNK_TEXTS)


@pytest.mark.slow
def test_a_killed_reindex_keeps_its_finished_chunks(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process is killed (no clean-up at all) once a chunk is on disk; the next sync embeds only the rest."""
    import os
    import signal
    import subprocess
    import sys
    import time

    for i in range(TOPICS):
        (vault.topics_dir / f"t{i}.md").write_text(topic(f"t{i}", 1 + i * ENTRIES), encoding="utf-8")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    child = subprocess.Popen([sys.executable, "-m", "memd", "--vault", str(vault.root), "reindex"], env=env)
    try:
        deadline = time.monotonic() + 600  # a hang guard, far past the minute one chunk takes
        while not logged_segments(vault) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.poll() is None, "the build finished before it could be stopped"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait()
    kept = stored(vault)
    assert 0 < len(kept) < TOPICS * ENTRIES
    counting = Counting(monkeypatch)
    store = IndexStore(vault)
    store.sync()
    store.close()
    assert len(stored(vault)) == TOPICS * ENTRIES
    # No record that had a vector was embedded again.
    done = {vectors.vector_text(r) for r in records_of(vault) if r.rid in set(kept.rids)}
    assert not done & set(counting.texts)


def logged_segments(vault: Vault) -> list[int]:
    """The segments the log names (a segment is kept once the log written after it names it)."""
    try:
        return list(json.loads((vault.index_dir / "vectors" / "log.json").read_text())["segments"])
    except (OSError, ValueError):
        return []


def records_of(vault: Vault) -> list[Record]:
    return [
        record
        for path in sorted(vault.topics_dir.glob("*.md"))
        for record in records_for(vault.rel_of(path), path.read_text(encoding="utf-8"))
        if vectors.wants_vector(record)
    ]
