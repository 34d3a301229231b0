"""Search-by-meaning benchmark: embedding throughput and query latency with vectors on.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_vectors.py              # embed 10k entries; query at 10k and 100k records
    python bench/bench_vectors.py 2000         # embed 2000 entries only (quick look)

1. Embedding: a vault of N entries of realistic chat text (words drawn from the
   hand-written chats in bench/data/informal-chat, 6 to 30 words each, every
   text distinct) is indexed from scratch; the time and CPU time of the
   vectors are reported, and the rate in entries per second.
2. Query latency at 10k and 100k entries: the synthetic vaults of
   bench_index.py, indexed lexically; their vectors are random unit vectors
   written straight into the vector index (a similarity search costs the same
   whatever the vectors hold, and embedding 100k entries takes a quarter of
   an hour). Each query runs ``retrieve`` as ``memd search`` does, including
   the freshness check and the query's own embedding, with meaning on and off.
"""

from __future__ import annotations

import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_index import ENTRIES_PER_TOPIC, QUERIES, topic_text, vocabulary

from memd.index import IndexStore
from memd.index.retrieve import Options, retrieve
from memd.index.vectors import VectorIndex
from memd.setup import init_vault
from memd.vault import find_vault

CHATS = Path(__file__).resolve().parent / "data" / "informal-chat"


def chat_words() -> list[str]:
    text = " ".join(path.read_text(encoding="utf-8") for path in sorted(CHATS.glob("*.txt")))
    words = [w for w in re.findall(r"[a-z']+", text.lower()) if len(w) > 1]
    return sorted(set(words))


def embedding(entries: int) -> dict[str, float]:
    rng = random.Random(entries)
    words = chat_words()
    weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(words))]
    with tempfile.TemporaryDirectory(prefix="memd-bench-") as folder:
        vault = init_vault(Path(folder) / "vault").vault
        seq = 1
        for n in range(entries // ENTRIES_PER_TOPIC):
            lines = ["---", f'id: "chat-{n}"', 'summary: "chat"', "---", f"# Chat {n}"]
            for _ in range(ENTRIES_PER_TOPIC):
                text = " ".join(rng.choices(words, weights, k=rng.randint(6, 30))).capitalize() + f". #{seq}"
                lines.append(f"- <seq={seq},time=2026-01-01T09:00,source=user> {text}")
                seq += 1
            (vault.topics_dir / f"chat-{n}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        store = IndexStore(vault)
        wall, cpu = time.perf_counter(), time.process_time()
        report = store.rebuild()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        store.close()
    return {"entries": entries, "embedded": report.embedded, "index_s": wall, "index_cpu_s": cpu}


def latency(entries: int) -> dict[str, float]:
    rng = random.Random(entries)
    words = vocabulary(rng)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    with tempfile.TemporaryDirectory(prefix="memd-bench-") as folder:
        vault = init_vault(Path(folder) / "vault").vault
        for n in range(entries // ENTRIES_PER_TOPIC):
            text = topic_text(n, 1 + n * ENTRIES_PER_TOPIC, rng, words, weights)
            (vault.topics_dir / f"topic-{n}.md").write_text(text, encoding="utf-8")
        vault.config_path.write_text('[index]\nembedding = "none"\n', encoding="utf-8")
        lexical = IndexStore(vault)
        lexical.rebuild()
        _random_vectors(vault, lexical)
        lexical.close()
        vault.config_path.write_text('[index]\nembedding = "minilm-l6"\n', encoding="utf-8")
        vault = find_vault(vault.root)  # reads the config anew
        store = IndexStore(vault)
        store.sync()
        queries = [" ".join(rng.choices(words[:2000], k=rng.randint(1, 4))) for _ in range(QUERIES)]
        out: dict[str, float] = {"entries": entries, "vectors": len(store._vectors or [])}
        for name, options in (("hybrid", Options()), ("lexical", Options(fusion="off"))):
            latencies = []
            for query in queries:
                started = time.perf_counter()
                store.sync()
                retrieve(store.backend(), query, 10, options=options)
                latencies.append(time.perf_counter() - started)
            latencies.sort()
            out[f"{name}_p50_ms"] = 1000 * statistics.median(latencies)
            out[f"{name}_p95_ms"] = 1000 * latencies[int(0.95 * (len(latencies) - 1))]
        store.close()
    return out


def _random_vectors(vault, store: IndexStore) -> None:  # type: ignore[no-untyped-def]
    """Vectors for every record, written as the index would, but random instead of embedded."""
    from memd.index.records import read_records

    manifest = store._load_manifest()
    assert manifest is not None
    digests = {rel: str(entry[2]) for rel, entry in manifest["files"].items()}
    index = VectorIndex(store.vectors_path, "minilm-l6", 384)
    rng = np.random.default_rng(1)

    def fake(texts: list[str]) -> np.ndarray:
        vectors = rng.standard_normal((len(texts), 384)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    index.refresh(digests, lambda rel: read_records(vault.root, rel)[1], fake)
    index.save()


def main(argv: list[str]) -> None:
    sizes = [int(arg) for arg in argv]
    for size in sizes or [10_000]:
        r = embedding(size)
        print(
            f"embed {r['entries']} entries: {r['embedded']} texts, {r['index_s']:.1f} s "
            f"({r['index_cpu_s']:.1f} s CPU), {r['embedded'] / r['index_s']:.0f} entries/s",
            flush=True,
        )
    if sizes:
        return
    print(f"{'entries':>8} {'vectors':>8} {'hybrid p50':>11} {'hybrid p95':>11} {'words p50':>10} {'words p95':>10}")
    for size in (10_000, 100_000):
        r = latency(size)
        print(
            f"{r['entries']:>8} {r['vectors']:>8} {r['hybrid_p50_ms']:>11.1f} {r['hybrid_p95_ms']:>11.1f} "
            f"{r['lexical_p50_ms']:>10.1f} {r['lexical_p95_ms']:>10.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
