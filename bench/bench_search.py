"""In-process search CPU on an existing vault, for one checkout or two side by side.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_search.py VAULT QUERIES                    # the memd this Python imports
    python bench/bench_search.py VAULT QUERIES --against ../old   # and another checkout, interleaved

QUERIES is a JSON list of strings (or a text file, one query a line). Each
round runs one process per checkout (``PYTHONPATH``), alternating, so both
see the same load: it opens the vault with ``Memory`` as the daemon and the
MCP server do (index and vectors in step first, one BLAS thread), runs the
first few queries to warm up, then times ``Memory.search`` on the rest, CPU
per query. Between two searches it settles the heap as those servers do
(``memd.core.heap``: collect what the search left, freeze what is alive, so
no full collection walks the caches inside a search); that CPU is not the
search's and is printed apart, as the mean per search. Printed per checkout:
the median over rounds of each round's p50 and p95. The query's embedding
is included (``embed_seconds=0``: nothing is embedded besides it). Both
checkouts open the same vault and index, and only the searches are timed:
compare checkouts whose index formats agree (one that rewrites the index on
opening would make each round of the other rewrite it back, untimed but slow).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from percentiles import percentile

WARM = 5

_ROUND = """
import json, statistics, sys, time
from memd.app import Memory
from memd.core.heap import Heap
from memd.index.embedding import one_blas_thread_from_now

one_blas_thread_from_now()
vault, queries, warm = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
memory = Memory.open(vault)
heap = Heap()
for query in queries[:warm]:
    memory.search(query, limit=10, embed_seconds=0.0)
    heap.settle()
cpu, settle = [], []
for query in queries[warm:]:
    start = time.process_time()
    memory.search(query, limit=10, embed_seconds=0.0)
    cpu.append((time.process_time() - start) * 1000)
    start = time.process_time()
    heap.settle()
    settle.append((time.process_time() - start) * 1000)
print(json.dumps({"search": cpu, "settle": settle}))
"""


def read_queries(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return [str(query) for query in json.loads(text)]
    return [line.strip() for line in text.splitlines() if line.strip()]


def one_round(vault: Path, queries: list[str], code: str | None) -> tuple[list[float], list[float]]:
    """CPU ms of each timed search, and of each settle after it."""
    env = {**os.environ, "PYTHONPATH": code} if code else None
    done = subprocess.run(
        [sys.executable, "-c", _ROUND, str(vault), json.dumps(queries), str(WARM)],
        env=env,
        capture_output=True,
        text=True,
        cwd=code or None,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "a round failed")
    found = json.loads(done.stdout)
    return [float(value) for value in found["search"]], [float(value) for value in found["settle"]]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("queries", type=Path)
    parser.add_argument("--count", type=int, default=65, help="queries a round (the first 5 warm up)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", metavar="DIR", help="also run each round from the memd of this checkout")
    args = parser.parse_args(argv)
    queries = read_queries(args.queries)[: args.count]
    if len(queries) <= WARM:
        raise SystemExit(f"{args.queries}: needs more than {WARM} queries")
    codes: list[str | None] = [None] if not args.against else [None, str(Path(args.against).resolve())]
    p50s: dict[str | None, list[float]] = {code: [] for code in codes}
    p95s: dict[str | None, list[float]] = {code: [] for code in codes}
    settles: dict[str | None, list[float]] = {code: [] for code in codes}
    for _ in range(args.rounds):
        for code in codes:
            cpu, settle = one_round(args.vault, queries, code)
            p50s[code].append(statistics.median(cpu))
            p95s[code].append(percentile(cpu, 0.95))
            settles[code].append(statistics.fmean(settle))
    for code in codes:
        print(
            f"{'this memd' if code is None else code}: {len(queries) - WARM} searches a round, "
            f"{args.rounds} rounds; CPU per search, median of the rounds: "
            f"p50 {statistics.median(p50s[code]):.1f} ms, p95 {statistics.median(p95s[code]):.1f} ms; "
            f"settling between searches, mean {statistics.median(settles[code]):.1f} ms"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
