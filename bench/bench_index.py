"""Index benchmark: build time, query latency, one-file update time, per backend.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_index.py                        # 10k and 100k entries, every backend installed
    python bench/bench_index.py 5000                   # other sizes
    python bench/bench_index.py --backend tantivy      # one backend (whoosh, tantivy)

Each size gets a synthetic vault in a temporary folder: topic files of 50
entries under 5 headings, words drawn from a Zipf-like distribution over a
5000-word vocabulary (so queries hit common and rare terms alike). Every
backend gets its own copy of the same vault and the same queries, one after
the other in one run, so their figures compare side by side. Queries go
through ``retrieve`` exactly as ``memd search`` runs it, including the
per-query freshness check (a stat of every indexed file, reported alone as
``fresh``); ``search`` is the backend's own BM25 query alone (the candidates
``retrieve`` asks for). An update is ``IndexStore.sync`` after one topic
file changed (vault scan, hash, manifest, backend, with its fsyncs in wall
time); ``backend`` is the backend's ``replace_files`` of that file alone.
Words only (``index.embedding = none``): meaning is bench_vectors.py's.
Times are CPU seconds of this process (all threads), which a busy machine
disturbs least, with wall-clock medians beside them.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memd.app.init import init_vault
from memd.index import Filters, IndexStore
from memd.index.backends import BACKENDS, missing_package
from memd.index.records import records_for
from memd.index.retrieve import Options, query_terms, retrieve
from memd.vault.vault import Vault

ENTRIES_PER_TOPIC = 50
HEADINGS_PER_TOPIC = 5
QUERIES = 200


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def sentence(rng: random.Random, words: list[str], weights: list[float]) -> str:
    return " ".join(rng.choices(words, weights, k=rng.randint(8, 30))).capitalize() + "."


def signature(seq: int) -> str:
    return f"seq={seq},time=2026-{1 + seq % 12:02d}-{1 + seq % 28:02d}T09:00,source=user"


def topic_text(
    n: int,
    seq: int,
    rng: random.Random,
    words: list[str],
    weights: list[float],
    signed: Callable[[int], str] = signature,
) -> str:
    """A topic of ``ENTRIES_PER_TOPIC`` entries from ``seq`` on; ``signed(seq)`` is each one's signature."""
    lines = ["---", f'id: "topic-{n}"', f'summary: "synthetic topic {n}"', "---"]
    per_heading = ENTRIES_PER_TOPIC // HEADINGS_PER_TOPIC
    for h in range(HEADINGS_PER_TOPIC):
        lines.append(f"# {' '.join(rng.choices(words, weights, k=2)).title()} {h}")
        for _ in range(per_heading):
            lines.append(f"- <{signed(seq)}> {sentence(rng, words, weights)}")
            seq += 1
    return "\n".join(lines) + "\n"


def make_vault(folder: Path, entries: int, rng: random.Random, words: list[str], weights: list[float]) -> Vault:
    vault = init_vault(folder).vault
    for n in range(entries // ENTRIES_PER_TOPIC):
        text = topic_text(n, 1 + n * ENTRIES_PER_TOPIC, rng, words, weights)
        (vault.topics_dir / f"topic-{n}.md").write_text(text, encoding="utf-8")
    return vault


def _pct(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[int(pct / 100 * (len(ordered) - 1))]


def run(entries: int, backend: str, folder: Path, queries: list[str], update_texts: list[tuple[int, str]]) -> dict:
    """Build, query and update one backend over its own copy of the vault in ``folder``."""
    vault = Vault(folder)
    store = IndexStore(vault, backend)
    cpu, wall = time.process_time(), time.perf_counter()
    report = store.rebuild()
    build_cpu, build_wall = time.process_time() - cpu, time.perf_counter() - wall

    lexical = store.backend()
    size = 2 * Options().candidates  # what retrieve asks for across both kinds
    search_cpu, fresh_cpu, retrieve_cpu, retrieve_wall = [], [], [], []
    for query in queries:
        terms = query_terms(lexical, query)
        cpu = time.process_time()
        lexical.search(terms, size, Filters())
        search_cpu.append(time.process_time() - cpu)
        cpu, wall = time.process_time(), time.perf_counter()
        store.sync()
        fresh_cpu.append(time.process_time() - cpu)
        retrieve(store.backend(), query, 10)
        retrieve_cpu.append(time.process_time() - cpu)
        retrieve_wall.append(time.perf_counter() - wall)

    updates_cpu, updates_wall, backend_cpu = [], [], []
    for n, line in update_texts:
        path = vault.topics_dir / f"topic-{n}.md"
        path.write_text(path.read_text() + line)
        cpu, wall = time.process_time(), time.perf_counter()
        store.sync()
        updates_cpu.append(time.process_time() - cpu)
        updates_wall.append(time.perf_counter() - wall)
        # The backend's share: the same file's records replaced again, without the vault scan.
        rel = vault.rel_of(path)
        records = records_for(rel, path.read_text())
        cpu = time.process_time()
        lexical.replace_files([rel], records)
        backend_cpu.append(time.process_time() - cpu)
    store.close()
    ms = 1000.0
    return {
        "backend": backend,
        "entries": entries,
        "records": report.records,
        "build_cpu_s": build_cpu,
        "build_wall_s": build_wall,
        "search_cpu_p50_ms": ms * statistics.median(search_cpu),
        "search_cpu_p95_ms": ms * _pct(search_cpu, 95),
        "fresh_cpu_p50_ms": ms * statistics.median(fresh_cpu),
        "query_cpu_p50_ms": ms * statistics.median(retrieve_cpu),
        "query_cpu_p95_ms": ms * _pct(retrieve_cpu, 95),
        "query_wall_p50_ms": ms * statistics.median(retrieve_wall),
        "query_wall_p95_ms": ms * _pct(retrieve_wall, 95),
        "update_cpu_ms": ms * statistics.median(updates_cpu),
        "update_wall_ms": ms * statistics.median(updates_wall),
        "backend_update_cpu_ms": ms * statistics.median(backend_cpu),
    }


def compare(entries: int, backends: list[str]) -> list[dict]:
    """Every backend over copies of one synthetic vault, with the same queries and updates."""
    rng = random.Random(entries)
    words = vocabulary(rng)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    with tempfile.TemporaryDirectory(prefix="memd-bench-") as tmp:
        original = make_vault(Path(tmp) / "vault", entries, rng, words, weights)
        queries = [" ".join(rng.choices(words[:2000], k=rng.randint(1, 4))) for _ in range(QUERIES)]
        topics = entries // ENTRIES_PER_TOPIC
        updates = [
            (n, f"- <seq={10**7 + n},source=user> {sentence(rng, words, weights)}\n")
            for n in rng.sample(range(topics), min(topics, 9))
        ]
        rows = []
        for backend in backends:
            copy = Path(tmp) / backend
            shutil.copytree(original.root, copy)
            rows.append(run(entries, backend, copy, queries, updates))
            shutil.rmtree(copy)
    return rows


COLUMNS = (
    ("backend", "backend", "{:>8}"),
    ("entries", "entries", "{:>8}"),
    ("records", "records", "{:>8}"),
    ("build_cpu_s", "build cpu s", "{:>11.1f}"),
    ("build_wall_s", "wall s", "{:>7.1f}"),
    ("search_cpu_p50_ms", "search cpu p50/p95 ms", "{:>10.1f}"),
    ("search_cpu_p95_ms", "", "{:>10.1f}"),
    ("fresh_cpu_p50_ms", "fresh cpu ms", "{:>12.1f}"),
    ("query_cpu_p50_ms", "query cpu p50/p95 ms", "{:>10.1f}"),
    ("query_cpu_p95_ms", "", "{:>9.1f}"),
    ("query_wall_p50_ms", "wall p50/p95 ms", "{:>8.1f}"),
    ("query_wall_p95_ms", "", "{:>7.1f}"),
    ("update_cpu_ms", "update cpu ms", "{:>13.1f}"),
    ("update_wall_ms", "wall ms", "{:>8.1f}"),
    ("backend_update_cpu_ms", "backend cpu ms", "{:>14.1f}"),
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[10_000, 100_000])
    parser.add_argument("--backend", action="append", choices=list(BACKENDS), help="repeat for several (default: all)")
    args = parser.parse_args(argv)
    backends = args.backend or [name for name in BACKENDS if missing_package(name) is None]
    os.environ["MEMD_EMBEDDING"] = "none"
    print(
        f"{'backend':>8} {'entries':>8} {'records':>8} {'build cpu s':>11} {'wall s':>7} "
        f"{'search cpu p50/p95 ms':>21} {'fresh cpu ms':>12} {'query cpu p50/p95 ms':>20} {'wall p50/p95 ms':>16} "
        f"{'update cpu ms':>13} {'wall ms':>8} {'backend cpu ms':>14}"
    )
    for size in args.sizes:
        for row in compare(size, backends):
            print(" ".join(fmt.format(row[key]) for key, _, fmt in COLUMNS), flush=True)


if __name__ == "__main__":
    main()
