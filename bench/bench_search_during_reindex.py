"""`memd search` while `memd reindex` builds the vectors: whether it answers, its CPU, and
what it says about the vectors.

Not a test: run by hand and copy the figures into docs/benchmarks.md.

    python bench/bench_search_during_reindex.py                  # 10,000 entries in a scratch folder
    python bench/bench_search_during_reindex.py --entries 3000 --searches 5

Builds the chat-like vault bench/bench_vectors.py writes (no index; its files dated a day
back, as a vault in use), starts `memd reindex`
as a process of its own, waits until its words are indexed and it is embedding (the
vector log is on disk), then runs ``--searches`` searches as processes of their own, one
after the other, each a distinct query (``memd search Q --json``, no daemon). For each:
CPU (user+sys of the child, ``getrusage``), wall seconds, whether it answered (exit 0,
hits) and the note it printed on stderr. The reindex is left to finish; its CPU and wall
time are printed last.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUERIES = ["pottery class", "marathon training", "sourdough starter", "hiking trip", "new job", "painting"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "bench"))
    from bench_vectors import write_vault

    with tempfile.TemporaryDirectory(prefix="memd-reindex-") as folder:
        vault = write_vault(Path(folder), args.entries, seed=1)
        for path in vault.root.rglob("*.md"):  # written a day ago, as the files of a vault in use
            os.utime(path, (time.time() - 86400, time.time() - 86400))
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command = [sys.executable, "-m", "memd", "--vault", str(vault.root)]
        started = time.monotonic()
        reindex = subprocess.Popen([*command, "reindex"], env=env, cwd=vault.root, stdout=subprocess.DEVNULL)
        log = vault.index_dir / "vectors" / "log.json"
        while not log.exists() and reindex.poll() is None:
            time.sleep(0.05)
        print(f"reindex embedding after {time.monotonic() - started:.1f} s; searching", flush=True)
        cpu: list[float] = []
        for n in range(args.searches):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            clock = time.monotonic()
            done = subprocess.run(
                [*command, "search", QUERIES[n % len(QUERIES)], "--json"],
                env=env,
                cwd=vault.root,
                capture_output=True,
                text=True,
            )
            wall = time.monotonic() - clock
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            cpu.append(spent)
            note = next((line for line in done.stderr.splitlines() if line.startswith("note:")), "")
            answered = done.returncode == 0 and done.stdout.strip().startswith("[") and done.stdout.strip() != "[]"
            running = "reindex running" if reindex.poll() is None else "reindex done"
            print(f"search {n + 1}: {spent:.2f} s CPU, {wall:.2f} s wall, answered {answered} ({running}); {note}")
            if done.returncode != 0:
                print(f"  error: {done.stderr.strip()[:200]}")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        reindex.wait()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"median search CPU {statistics.median(cpu):.2f} s over {len(cpu)}")
        print(
            f"reindex: exit {reindex.returncode}, {time.monotonic() - started:.1f} s wall "
            f"(its CPU after the searches: {after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime:.1f} s)"
        )


if __name__ == "__main__":
    main()
