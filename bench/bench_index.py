"""Index benchmark: build time, query latency, one-file update time.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_index.py            # 10k and 100k entries
    python bench/bench_index.py 5000       # other sizes

Each size gets a synthetic vault in a temporary folder: topic files of 50
entries under 5 headings, words drawn from a Zipf-like distribution over a
5000-word vocabulary (so queries hit common and rare terms alike). Queries
go through ``retrieve`` exactly as ``memd search`` runs it, including the
per-query freshness check (a stat of every indexed file).
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from memd.index import IndexStore
from memd.index.retrieve import retrieve
from memd.setup import init_vault

ENTRIES_PER_TOPIC = 50
HEADINGS_PER_TOPIC = 5
QUERIES = 200
START = datetime(2023, 1, 1)
SOURCES = ("user", "user", "assistant")


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def sentence(rng: random.Random, words: list[str], weights: list[float]) -> str:
    return " ".join(rng.choices(words, weights, k=rng.randint(8, 30))).capitalize() + "."


def entry_time(seq: int) -> str:
    """Sessions of five entries, one every ~97 minutes: 100k entries span ~3.7 years of distinct times."""
    moment = START + timedelta(minutes=97 * (seq // 5))
    return moment.strftime("%Y-%m-%dT%H:%M")


def topic_text(n: int, seq: int, rng: random.Random, words: list[str], weights: list[float]) -> str:
    lines = ["---", f'id: "topic-{n}"', f'summary: "synthetic topic {n}"', "---"]
    per_heading = ENTRIES_PER_TOPIC // HEADINGS_PER_TOPIC
    for h in range(HEADINGS_PER_TOPIC):
        lines.append(f"# {' '.join(rng.choices(words, weights, k=2)).title()} {h}")
        for _ in range(per_heading):
            lines.append(
                f"- <seq={seq},time={entry_time(seq)},source={SOURCES[seq % 7 % 3]}> {sentence(rng, words, weights)}"
            )
            seq += 1
    return "\n".join(lines) + "\n"


def run(entries: int) -> dict[str, float]:
    rng = random.Random(entries)
    words = vocabulary(rng)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    with tempfile.TemporaryDirectory(prefix="memd-bench-") as folder:
        vault = init_vault(Path(folder) / "vault").vault
        topics = entries // ENTRIES_PER_TOPIC
        for n in range(topics):
            text = topic_text(n, 1 + n * ENTRIES_PER_TOPIC, rng, words, weights)
            (vault.topics_dir / f"topic-{n}.md").write_text(text, encoding="utf-8")

        store = IndexStore(vault)
        started = time.perf_counter()
        report = store.rebuild()
        build = time.perf_counter() - started

        queries = [" ".join(rng.choices(words[:2000], k=rng.randint(1, 4))) for _ in range(QUERIES)]
        latencies = []
        for query in queries:
            started = time.perf_counter()
            store.sync()
            retrieve(store.backend(), query, 10)
            latencies.append(time.perf_counter() - started)
        latencies.sort()

        updates = []
        for n in rng.sample(range(topics), 5):
            path = vault.topics_dir / f"topic-{n}.md"
            path.write_text(path.read_text() + f"- <seq={10**7 + n},source=user> {sentence(rng, words, weights)}\n")
            started = time.perf_counter()
            store.sync()
            updates.append(time.perf_counter() - started)
        store.close()
    return {
        "entries": entries,
        "records": report.records,
        "files": topics,
        "build_s": build,
        "query_p50_ms": 1000 * statistics.median(latencies),
        "query_p95_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
        "update_ms": 1000 * statistics.median(updates),
    }


def main(argv: list[str]) -> None:
    sizes = [int(arg) for arg in argv] or [10_000, 100_000]
    print(
        f"{'entries':>8} {'records':>8} {'files':>6} {'build s':>8} {'query p50 ms':>13} "
        f"{'query p95 ms':>13} {'update ms':>10}"
    )
    for size in sizes:
        r = run(size)
        print(
            f"{r['entries']:>8} {r['records']:>8} {r['files']:>6} {r['build_s']:>8.1f} {r['query_p50_ms']:>13.1f} "
            f"{r['query_p95_ms']:>13.1f} {r['update_ms']:>10.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
