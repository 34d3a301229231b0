"""Search-by-meaning benchmark: query latency with meaning on and off, where a query's
time goes, the first query in a fresh process, and embedding throughput.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_vectors.py                     # 10k and 100k records (about 10 minutes)
    python bench/bench_vectors.py --sizes 10000       # 10k only
    python bench/bench_vectors.py --backend tantivy   # another lexical backend (sets MEMD_INDEX_BACKEND)

1. Embedding: a vault of 10,000 chat-like entries (words drawn from the
   hand-written chats in bench/data/informal-chat, one to three sentences of
   3 to 12 words each, every text distinct, 50 entries a file under 5
   headings) is indexed from scratch, vectors included (the records' and
   their sentences'): time, CPU time, entries per second.
2. Steady-state latency, in one process with the model and vectors loaded
   (the daemon and the MCP server are long-lived): distinct queries (a
   question opening plus 2-5 chat words, so no query vector is reused) run
   through ``retrieve`` as ``memd search`` does, freshness check included,
   with meaning on and off, alternating which goes first. Wall and CPU
   p50/p95, and the mean CPU per part: freshness check, query embedding,
   similarity (product, top-k, look-ups), lexical search (and analysis),
   record fetches (``get``: meaning's candidates; ``by_seq``: neighbours),
   and the rest of ``retrieve`` (fusion, re-ranking, MMR).
   At 10k the vectors are the real ones from step 1. At 100k the text is
   generated the same way, but embedding it would take a quarter of an hour:
   its vectors are the 10k real ones repeated with a little noise, so
   similarities, and the candidates that pass the similarity floor, are like
   real ones; a product over them costs what a product over real ones does.
3. First query in a fresh process (what one ``memd search`` pays): imports,
   opening the index (model and vectors loaded), the first query and a
   second one, in a child process; and the whole ``python -m memd search``
   command. Medians of 3 runs, meaning on and off (``MEMD_EMBEDDING=none``).

The machine is shared: read CPU times and the on/off ratios measured side by
side more than absolute wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from percentiles import percentile

from memd.app.init import init_vault
from memd.index import IndexStore
from memd.index.retrieve import Options, retrieve
from memd.index.vectors import VectorIndex
from memd.vault.vault import Vault, find_vault

CHATS = Path(__file__).resolve().parent / "data" / "informal-chat"
ENTRIES_PER_FILE = 50
HEADINGS_PER_FILE = 5
QUERIES = 200
WARM_UP = 5
FRESH_RUNS = 3
PARTS = ("fresh", "embed", "similar", "search", "get", "by_seq", "rest")
OPENINGS = ("what did", "when was", "how much", "where is", "who", "why did", "")


def chat_words() -> list[str]:
    text = " ".join(path.read_text(encoding="utf-8") for path in sorted(CHATS.glob("*.txt")))
    return sorted({w for w in re.findall(r"[a-z']+", text.lower()) if len(w) > 1})


def chat_texts(rng: random.Random) -> Iterator[str]:
    """Texts like chat turns: one to three sentences of 3 to 12 chat words, common words
    more often (Zipf-like); each of several sentences gets a vector of its own."""
    words = chat_words()
    weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(words))]
    while True:
        sizes = [rng.randint(3, 12) for _ in range(rng.randint(1, 3))]
        yield " ".join(" ".join(rng.choices(words, weights, k=k)).capitalize() + "." for k in sizes)


def write_vault(root: Path, entries: int, seed: int) -> Vault:
    rng = random.Random(seed)
    words = chat_words()
    weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(words))]
    texts = chat_texts(rng)
    vault = init_vault(root).vault
    seq = 1
    for n in range(entries // ENTRIES_PER_FILE):
        lines = ["---", f'id: "chat-{n}"', 'summary: "chat"', "---"]
        for h in range(HEADINGS_PER_FILE):
            lines.append(f"# {' '.join(rng.choices(words, weights, k=2)).title()} {h}")
            for _ in range(ENTRIES_PER_FILE // HEADINGS_PER_FILE):
                text = f"{next(texts)} #{seq}"
                stamp = f"2026-{1 + seq % 12:02d}-{1 + seq % 28:02d}T09:00"
                lines.append(f"- <seq={seq},time={stamp},source=user> {text}")
                seq += 1
        (vault.topics_dir / f"chat-{n}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return vault


def queries(count: int) -> list[str]:
    rng = random.Random(7)
    words = chat_words()[:3000]
    out: list[str] = []
    while len(out) < count:
        query = f"{rng.choice(OPENINGS)} {' '.join(rng.choices(words, k=rng.randint(2, 5)))}".strip()
        if query not in out:
            out.append(query)
    return out


@contextmanager
def environment(**values: str) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# -- 1. embedding ---------------------------------------------------------------
def embedding(vault: Vault) -> dict[str, float]:
    store = IndexStore(vault)
    wall, cpu = time.perf_counter(), time.process_time()
    report = store.rebuild()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    store.close()
    return {"entries": report.records, "embedded": report.embedded, "wall": wall, "cpu": cpu}


def synthetic_vectors(vault: Vault, real: np.ndarray) -> None:
    """Vectors for every record of ``vault``, written as the index would, made from
    ``real`` ones (cycled, with noise) instead of embedded. The lexical index is built
    first, without the model."""
    with environment(MEMD_EMBEDDING="none"):
        store = IndexStore(find_vault(vault.root))
        store.rebuild()
        manifest = store._load_manifest()
        store.close()
    assert manifest is not None
    digests = {rel: str(entry[2]) for rel, entry in manifest["files"].items()}
    rng = np.random.default_rng(1)
    done = [0]

    def fake(texts: Sequence[str]) -> np.ndarray:
        rows = real[np.arange(done[0], done[0] + len(texts)) % len(real)]
        rows = rows + 0.02 * rng.standard_normal(rows.shape).astype(np.float32)
        done[0] += len(texts)
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)

    from memd.index.records import indexed_records

    index = VectorIndex.load(vault.index_dir, "minilm-l6", 384)
    index.refresh(digests, lambda rel: indexed_records(vault.root, rel)[1], fake)  # written as it goes


# -- 2. steady state ------------------------------------------------------------
class Clock:
    """CPU and wall seconds per part of one query."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        started = time.process_time()
        try:
            yield
        finally:
            self.cpu[name] += time.process_time() - started


class TimedSimilarity:
    def __init__(self, inner: Any, clock: Clock) -> None:
        self.inner, self.clock = inner, clock

    def top(self, limit: int) -> list[tuple[str, float]]:
        with self.clock.part("similar"):
            return self.inner.top(limit)

    def of_records(self, rids: list[str], sentence_share: float = 0.0) -> list[float | None]:
        with self.clock.part("similar"):
            return self.inner.of_records(rids, sentence_share)


class TimedBackend:
    """The store's backend, timing each call ``retrieve`` makes into ``clock``."""

    def __init__(self, inner: Any, clock: Clock) -> None:
        self.inner, self.clock = inner, clock

    def similar(self, query: str) -> TimedSimilarity:
        with self.clock.part("embed"):
            vector = self.inner.query_vector(query)
        with self.clock.part("similar"):
            return TimedSimilarity(self.inner.similar_to(vector), self.clock)

    def search(self, *args: Any) -> Any:
        with self.clock.part("search"):
            return self.inner.search(*args)

    def analyse(self, text: str) -> Any:
        with self.clock.part("search"):
            return self.inner.analyse(text)

    def get(self, rids: Any) -> Any:
        with self.clock.part("get"):
            return self.inner.get(rids)

    def by_seq(self, seqs: Any) -> Any:
        with self.clock.part("by_seq"):
            return self.inner.by_seq(seqs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def steady(vault: Vault, texts: list[str]) -> dict[str, dict[str, Any]]:
    from memd.index.embedding import _query_vector

    _query_vector.cache_clear()  # the same queries ran at the size before
    store = IndexStore(find_vault(vault.root))
    store.sync()
    modes = {"on": Options(), "off": Options(fusion="off")}
    for text in [f"warm up {i}" for i in range(WARM_UP)]:
        for options in modes.values():
            retrieve(store.backend(), text, 10, options=options)
    runs: dict[str, list[tuple[float, float, Clock]]] = {mode: [] for mode in modes}
    for i, text in enumerate(texts):
        for mode in list(modes)[:: 1 if i % 2 == 0 else -1]:
            clock = Clock()
            wall, cpu = time.perf_counter(), time.process_time()
            with clock.part("fresh"):
                store.sync()
            retrieve(TimedBackend(store.backend(), clock), text, 10, options=modes[mode])
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            clock.cpu["rest"] = cpu - sum(clock.cpu.values())
            runs[mode].append((wall, cpu, clock))
    out: dict[str, dict[str, Any]] = {}
    for mode, rows in runs.items():
        walls = sorted(row[0] for row in rows)
        cpus = sorted(row[1] for row in rows)
        out[mode] = {
            "wall_p50": 1000 * statistics.median(walls),
            "wall_p95": 1000 * percentile(walls, 0.95),
            "cpu_p50": 1000 * statistics.median(cpus),
            "cpu_p95": 1000 * percentile(cpus, 0.95),
            "parts": {part: 1000 * statistics.fmean(row[2].cpu.get(part, 0.0) for row in rows) for part in PARTS},
        }
    store.close()
    return out


# -- 3. first query in a fresh process -----------------------------------------
FIRST_QUERY = """
import json, sys, time
marks = [(time.perf_counter(), time.process_time())]
def mark():
    marks.append((time.perf_counter(), time.process_time()))
from memd.index import IndexStore
from memd.index.retrieve import retrieve
from memd.vault.vault import find_vault
mark()
store = IndexStore(find_vault(sys.argv[1]))
store.sync()
backend = store.backend()
mark()
retrieve(backend, sys.argv[2], 10)
mark()
retrieve(backend, sys.argv[3], 10)
mark()
names = ["import", "open", "first", "second"]
print(json.dumps({n: [1000 * (b[0] - a[0]), 1000 * (b[1] - a[1])] for n, a, b in zip(names, marks, marks[1:])}))
"""


def fresh_process(vault: Vault, text: str, meaning: bool) -> dict[str, tuple[float, float]]:
    env = dict(os.environ) if meaning else {**os.environ, "MEMD_EMBEDDING": "none"}
    runs = []
    for i in range(FRESH_RUNS):
        done = subprocess.run(
            [sys.executable, "-c", FIRST_QUERY, str(vault.root), f"{text} {i}", f"how much was the bike {i}"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    phases = {
        name: (statistics.median(r[name][0] for r in runs), statistics.median(r[name][1] for r in runs))
        for name in runs[0]
    }
    walls, cpus = [], []
    for i in range(FRESH_RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "memd", "search", f"{text} {i}", "--json"],
            cwd=vault.root,
            env=env,
            capture_output=True,
            check=True,
        )
        walls.append(1000 * (time.perf_counter() - started))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(1000 * (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
    phases["memd search"] = (statistics.median(walls), statistics.median(cpus))
    return phases


# -- report -----------------------------------------------------------------------
def print_steady(size: int, result: dict[str, dict[str, Any]]) -> None:
    for mode in ("on", "off"):
        r = result[mode]
        parts = " ".join(f"{r['parts'][part]:>7.1f}" for part in PARTS)
        print(
            f"{size:>8} {mode:>7} {r['wall_p50']:>8.1f} {r['wall_p95']:>8.1f} {r['cpu_p50']:>8.1f} "
            f"{r['cpu_p95']:>8.1f} | {parts}",
            flush=True,
        )
    on = result["on"]["parts"]
    meaning = on["embed"] + on["similar"] + on["get"]
    words = on["fresh"] + on["search"] + on["by_seq"]
    total = sum(on.values()) or 1.0
    print(
        f"{'':>8} meaning on: embedding + similarity + its candidates' fetch {meaning:.1f} ms CPU "
        f"({100 * meaning / total:.0f}%), freshness + lexical search + neighbours {words:.1f} ms "
        f"({100 * words / total:.0f}%), rest {on['rest']:.1f} ms",
        flush=True,
    )


def print_fresh(size: int, on: dict[str, tuple[float, float]], off: dict[str, tuple[float, float]]) -> None:
    for name in on:
        print(
            f"{size:>8} {name:>12} {on[name][0]:>9.0f} {on[name][1]:>9.0f} | {off[name][0]:>9.0f} {off[name][1]:>9.0f}",
            flush=True,
        )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="record counts, comma-separated (10000 first)")
    parser.add_argument("--backend", help="lexical backend, passed on as MEMD_INDEX_BACKEND")
    parser.add_argument("--queries", type=int, default=QUERIES)
    args = parser.parse_args(argv)
    if args.backend:
        os.environ["MEMD_INDEX_BACKEND"] = args.backend
    sizes = [int(size) for size in args.sizes.split(",")]
    texts = queries(args.queries)
    print(f"lexical backend: {os.environ.get('MEMD_INDEX_BACKEND', 'default')}; {len(texts)} distinct queries")
    steady_rows: dict[int, dict[str, dict[str, Any]]] = {}
    fresh_rows: dict[int, tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="memd-bench-") as folder:
        real: np.ndarray | None = None
        for size in sizes:
            vault = write_vault(Path(folder) / f"v{size}", size, seed=size)
            if real is None:
                r = embedding(vault)
                print(
                    f"embedding {r['entries']:,} records from scratch: {r['embedded']:,} texts embedded, "
                    f"{r['wall']:.1f} s ({r['cpu']:.1f} s CPU), {r['embedded'] / r['wall']:.0f} entries/s",
                    flush=True,
                )
                real = np.array(VectorIndex.load(vault.index_dir, "minilm-l6", 384).base.matrix)
            else:
                started = time.perf_counter()
                synthetic_vectors(vault, real)
                print(f"{size:,} records indexed (vectors synthesised) in {time.perf_counter() - started:.0f} s")
            steady_rows[size] = steady(vault, texts)
            fresh_rows[size] = (
                fresh_process(vault, "what did they say about the vet", True),
                fresh_process(vault, "what did they say about the vet", False),
            )
    print("\nsteady state, ms per query (one process, model and vectors loaded); parts: mean CPU ms")
    print(
        f"{'records':>8} {'meaning':>7} {'wall p50':>8} {'wall p95':>8} {'CPU p50':>8} {'CPU p95':>8} | "
        + " ".join(f"{part:>7}" for part in PARTS)
    )
    for size, result in steady_rows.items():
        print_steady(size, result)
    print(f"\nfirst query in a fresh process, medians of {FRESH_RUNS}, ms (wall, CPU): meaning on | off")
    for size, (on, off) in fresh_rows.items():
        print_fresh(size, on, off)


if __name__ == "__main__":
    main(sys.argv[1:])
