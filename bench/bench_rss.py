"""Memory and CPU of a long-lived reader: RSS over many searches, through
``Memory.search`` and through the MCP server's ``memory_search`` tool.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_rss.py                          # 2,000 entries, 500 searches each way
    python bench/bench_rss.py --entries 10000 --calls 500
    python bench/bench_rss.py --against HEAD~3         # the code at a revision too, side by side
    python bench/bench_rss.py --vault DIR --calls 1000  # an indexed vault of your own (100k entries)

The vault is the one bench/bench_vectors.py writes (chat-like entries, 50 a
topic file), indexed once with this checkout's code, vectors included when
the embedding model is installed. Each way of searching then runs in a
child process of its own (so RSS is its alone): ``Memory.open`` once, then
``--calls`` distinct queries (a question opening plus 2-5 chat words), as an
agent keeping memd open would send them. The child reports its resident set
size (``VmRSS``) after chosen numbers of calls, and the CPU time of each call
(``time.process_time``: every thread of the process), and each full garbage
collection's CPU (the pauses a server's caches make: memd/core/heap.py). CPU
percentiles leave out the first ``WARM_UP`` calls (model and index loading).

With ``--against REV`` the ``memd`` package at that revision is extracted
(``git archive``) and the same children run with it first on the path, over
the same vault and queries, in the same run: the figures sit side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from percentiles import percentile
from revision import extract

REPO = Path(__file__).resolve().parent.parent
WARM_UP = 10
MODES = ("memory", "mcp")


def rss_mb() -> float:
    """This process's resident set size now, in MB (Linux)."""
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


# -- the child: one process, one way of searching ---------------------------------
def child(mode: str, vault: str, queries: list[str], samples: list[int]) -> dict[str, Any]:
    from memd import Memory

    memory = Memory.open(vault)
    if mode == "memory":

        def search(query: str) -> object:
            return memory.search(query)
    else:
        from memd.mcp.server import build_server

        server = build_server(memory)
        loop = asyncio.new_event_loop()

        def search(query: str) -> object:
            return loop.run_until_complete(server.call_tool("memory_search", {"query": query}))

    rss: dict[int, float] = {0: rss_mb()}
    cpu: list[float] = []
    full: list[float] = []  # CPU seconds of each full collection (the oldest generation)
    began = [0.0]

    def timed(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                began[0] = time.process_time()
            else:
                full.append(time.process_time() - began[0])

    gc.callbacks.append(timed)
    for n, query in enumerate(queries, start=1):
        started = time.process_time()
        search(query)
        cpu.append(time.process_time() - started)
        if n in samples:
            rss[n] = rss_mb()
    return {"rss": rss, "cpu": cpu, "full": full}


# -- the parent -------------------------------------------------------------------
def build(root: Path, entries: int) -> Path:
    sys.path.insert(0, str(REPO / "bench"))
    from bench_vectors import write_vault

    from memd.index import IndexStore

    vault = write_vault(root / "vault", entries, seed=1)
    store = IndexStore(vault)
    started = time.process_time()
    report = store.rebuild()
    store.close()
    print(
        f"vault: {entries:,} entries, {report.records:,} records, {report.embedded:,} texts embedded "
        f"({time.process_time() - started:.0f} s CPU)",
        flush=True,
    )
    return vault.root


def run_child(code: Path, mode: str, vault: Path, queries: Path, samples: list[int]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(code), str(REPO)]))
    args = [sys.executable, __file__, "--child", mode, "--vault", str(vault), "--queries", str(queries)]
    args += ["--samples", ",".join(map(str, samples))]
    done = subprocess.run(args, env=env, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout)
    result["rss"] = {int(n): mb for n, mb in result["rss"].items()}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--against", metavar="REV", help="also measure the memd package at this git revision")
    parser.add_argument("--modes", default=",".join(MODES), help="ways of searching to run (default: memory,mcp)")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--vault", help="an indexed vault to search instead of building one (--entries is then unused)")
    parser.add_argument("--queries", help=argparse.SUPPRESS)
    parser.add_argument("--samples", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        queries = json.loads(Path(args.queries).read_text(encoding="utf-8"))
        samples = [int(n) for n in args.samples.split(",")]
        print(json.dumps(child(args.child, args.vault, queries, samples)))
        return

    samples = sorted({n for n in (1, 10, 20, 50, 100, 200, 300, 400, 500, args.calls) if n <= args.calls})
    with tempfile.TemporaryDirectory(prefix="memd-rss-") as folder:
        root = Path(folder)
        vault = Path(args.vault).resolve() if args.vault else build(root, args.entries)
        sys.path.insert(0, str(REPO / "bench"))
        from bench_vectors import queries as make_queries

        query_file = root / "queries.json"
        query_file.write_text(json.dumps(make_queries(args.calls)), encoding="utf-8")
        versions = {"this checkout": REPO}
        if args.against:
            versions = {args.against: extract(args.against, root / "against"), **versions}
        print(f"{args.calls} distinct searches per process; RSS in MB after n calls, CPU ms per call after {WARM_UP}")
        header = ["code", "way", *(f"n={n}" for n in samples), "growth 10->last", "20->last", "CPU p50", "CPU p95"]
        header += ["p99", "max", "full collections (median ms)"]
        print(" | ".join(header))
        for mode in [m for m in args.modes.split(",") if m in MODES]:
            for name, code in versions.items():
                result = run_child(code, mode, vault, query_file, samples)
                rss, cpu = result["rss"], [1000 * s for s in result["cpu"][WARM_UP:]]
                last = max(rss)
                row = [name, mode, *(f"{rss[n]:.0f}" for n in samples)]
                row += [f"{rss[last] / rss[min(10, last)]:.2f}x", f"{rss[last] / rss[min(20, last)]:.2f}x"]
                row += [f"{statistics.median(cpu):.1f}"]
                row += [f"{percentile(cpu, 0.95):.1f}", f"{percentile(cpu, 0.99):.1f}", f"{max(cpu):.1f}"]
                full = [1000 * s for s in result["full"]]
                row += [f"{len(full)} ({statistics.median(full):.0f})" if full else "0"]
                print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main()
