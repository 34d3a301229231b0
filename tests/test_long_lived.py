"""A process that keeps memd open (the MCP server, the daemon, an agent's
library call) searches for days: its memory must stay flat, and what it
serves must follow the files as a fresh process would."""

from __future__ import annotations

import asyncio
import gc
import os
import random
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memd import Memory
from memd.index import IndexStore
from memd.index.vectors import VectorIndex
from memd.vault.vault import Vault

WORDS = (
    "kyoto trip train coffee oat milk dentist appointment garden tomato dana sam project atlas deadline "
    "budget camping lake bike knee running sourdough starter peanut allergy vet cat flight passport"
).split()


def write_topics(vault: Vault, files: int = 4, per_file: int = 30) -> None:
    rng = random.Random(3)
    seq = 1
    for n in range(files):
        lines = ["---", f"id: notes-{n}", 'summary: "notes"', "---", f"# Notes {n}"]
        for _ in range(per_file):
            said = " ".join(rng.choices(WORDS, k=rng.randint(4, 10))).capitalize()
            lines.append(f"- <seq={seq},time=2026-{1 + seq % 12:02d}-{1 + seq % 28:02d}T09:00,source=user> {said}.")
            seq += 1
        (vault.topics_dir / f"notes-{n}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def queries(count: int) -> Iterator[str]:
    """Distinct queries, as an agent sends them (no query vector reused)."""
    rng = random.Random(11)
    for n in range(count):
        yield f"what about {' '.join(rng.choices(WORDS, k=3))} {n}"


@pytest.fixture
def notes(vault: Vault) -> Vault:
    write_topics(vault)
    return vault


def mcp_search(memory: Memory) -> Callable[[str], object]:
    from memd.mcp.server import build_server

    server = build_server(memory)
    loop = asyncio.new_event_loop()

    def search(query: str) -> object:
        return loop.run_until_complete(server.call_tool("memory_search", {"query": query}))

    return search


def growth(search: Callable[[str], object], calls: int, warm_up: int = 10) -> int:
    """Bytes still allocated after ``calls`` searches beyond what ``warm_up`` left."""
    asked = queries(warm_up + calls)
    tracemalloc.start()
    try:
        for _ in range(warm_up):
            search(next(asked))
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for query in asked:
            search(query)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def live(kind: type) -> int:
    gc.collect()
    return sum(1 for thing in gc.get_objects() if type(thing) is kind)


def test_searches_keep_one_index_open_and_let_nothing_else_live(notes: Vault) -> None:
    memory = Memory.open(notes.root)
    for query in queries(20):
        assert memory.search(query).results
    assert live(IndexStore) == 1
    assert live(VectorIndex) <= 1  # one when the embedding model is installed, else none
    memory.close()
    assert live(IndexStore) == 0


def measured_growth(root: str, way: str, calls: int) -> int:
    """``growth`` of ``calls`` searches through ``way`` on the vault at ``root``."""
    memory = Memory.open(root)
    return growth(memory.search if way == "memory" else mcp_search(memory), calls)


@pytest.mark.slow
@pytest.mark.parametrize("way", ["memory", "mcp"])
def test_500_searches_leave_memory_flat(notes: Vault, way: str) -> None:
    import subprocess
    import sys
    from pathlib import Path

    # In a process of its own, as a server runs: in the test session's process, threads
    # and caches other tests left allocate meanwhile, and tracemalloc counts them too.
    repo = Path(__file__).resolve().parent.parent
    call = f"measured_growth({str(notes.root)!r}, {way!r}, 500)"
    code = f"from tests.test_long_lived import measured_growth; print({call})"
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    # What legitimately stays: the query vectors remembered (1.5 KB each, 512 at
    # most) and each distinct query's words. A backend kept alive per search
    # cost hundreds of kilobytes each on this vault.
    assert int(done.stdout.split()[-1]) < 2_000_000


def matched(memory: Memory, query: str) -> list[str]:
    """The seqs of the entries whose own words match ``query`` (not neighbours, not meaning)."""
    return [hit["seq"] for hit in memory.search(query).to_json()["results"] if hit["via"] == "match"]


def test_a_hand_edit_is_searchable_at_the_next_search(notes: Vault) -> None:
    memory = Memory.open(notes.root)
    assert matched(memory, "zeppelin") == []
    topic = notes.topics_dir / "notes-0.md"
    topic.write_text(topic.read_text() + "- <seq=900,time=2026-05-01T09:00,source=user> Rode a zeppelin.\n")
    assert matched(memory, "zeppelin") == ["900"]
    topic.write_text(topic.read_text().replace("zeppelin", "balloon"))
    assert matched(memory, "zeppelin") == []
    assert matched(memory, "balloon") == ["900"]


def test_what_another_process_indexes_is_followed(notes: Vault) -> None:
    memory = Memory.open(notes.root)
    assert matched(memory, "zeppelin") == []
    (notes.topics_dir / "air.md").write_text(
        "---\nid: air\nsummary: air\n---\n# Air\n- <seq=901,time=2026-05-01T09:00,source=user> Rode a zeppelin.\n"
    )
    # Another process (`memd reindex` here; the daemon after a hand edit) rewrites the index and vectors first.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent.parent), *sys.path]))
    subprocess.run([sys.executable, "-m", "memd", "--vault", str(notes.root), "reindex"], check=True, env=env)
    assert matched(memory, "zeppelin") == ["901"]
    memory.close()


def test_a_settings_change_opens_the_index_anew(notes: Vault) -> None:
    memory = Memory.open(notes.root)
    memory.search("kyoto")
    config = notes.meta_dir / "config.toml"
    config.write_text(config.read_text().replace('backend = "auto"', 'backend = "whoosh"'))
    assert memory.search("kyoto").results
    assert (notes.index_dir / "whoosh").is_dir()


def test_searches_while_vectors_are_behind_neither_walk_the_vault_nor_rewrite_the_index(
    notes: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    import memd.index.store as store

    # Files and folders changed within the last seconds are checked again at every
    # search (a stamp could still move in the same tick): these were written long ago.
    past = time.time() - 60
    for path in [notes.root, *notes.root.glob("[!.]*"), *notes.topics_dir.iterdir()]:
        os.utime(path, (past, past))
    memory = Memory.open(notes.root)
    assert memory.search("coffee oat milk").results  # words and vectors in step
    topic = notes.topics_dir / "notes-1.md"
    topic.write_text(topic.read_text() + "- <seq=902,time=2026-05-01T09:00,source=user> Rode a zeppelin.\n")
    os.utime(topic, (past + 30, past + 30))
    # A reader that must not wait (a served search while the daemon embeds): words only for the new entry.
    first = memory.search("zeppelin", embed_seconds=0.0)
    if first.vectors is None:
        pytest.skip("no embedding model installed")
    assert first.vectors[0] < first.vectors[1]
    walks: list[int] = []
    real_scan = store.scan
    monkeypatch.setattr(store, "scan", lambda vault: walks.append(1) or real_scan(vault))
    manifest = notes.index_dir / "manifest.json"
    written = manifest.stat().st_mtime_ns
    for query in queries(5):
        assert memory.search(query, embed_seconds=0.0).vectors == first.vectors
    assert matched(memory, "zeppelin") == ["902"]
    assert walks == [] and manifest.stat().st_mtime_ns == written


def test_a_server_leaves_what_it_keeps_out_of_full_collections(notes: Vault) -> None:
    """A full collection in a long-lived reader walks its caches and frees nothing
    (a search leaves no cycles): the MCP server freezes what is alive after each call."""
    memory = Memory.open(notes.root)
    search = mcp_search(memory)
    for query in queries(20):
        search(query)
    kept = gc.get_freeze_count()
    walked = len(gc.get_objects())  # what a full collection would walk now
    assert kept > 10 * walked
    memory.close()


def test_an_idle_daemon_freezes_what_its_searches_kept(vault: Vault) -> None:
    from memd.daemon.runner import Runner

    runner = Runner(vault)
    loop = threading.Thread(target=runner._loop)
    loop.start()
    try:
        for _ in range(300):  # a hang guard, not a timing: the loop idles within a second or two
            if runner.heap.settled:
                break
            time.sleep(0.1)
    finally:
        runner.stopping.set()
        runner.events.put(None)
        loop.join(timeout=60)
    assert runner.heap.settled > 0 and gc.get_freeze_count() > 0
