"""`memd verify` on a long history: the full walk, then the incremental one.

Usage: python bench/bench_verify.py [--commits 1000] [--repeat 5]

Builds a vault with ``--commits`` consolidation commits (a few entries each,
on rotating subjects), then times, as separate `memd verify` processes: the
full walk (``--full``), and the walk after one more consolidation (resuming
from the checkpoint the previous verify left). Prints CPU seconds (user+sys
of the process and its git children) and wall seconds, medians of
``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memd import Memory

SUBJECTS = "garden running cooking travel music family health reading money pets home work".split()


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memd", *args], env=env, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    random.seed(3)
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory.open(Memory.init(Path(tmp) / "vault").vault.root)
        started = time.perf_counter()
        for n in range(args.commits):
            subject = SUBJECTS[n % len(SUBJECTS)]
            memory.add([f"{subject} note {n}: {subject} detail {random.randint(0, 10**6)}" for _ in range(3)])
            memory.consolidate()
            if (n + 1) % 100 == 0:
                print(f"  built {n + 1} consolidations ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        env = {**os.environ, "MEMD_VAULT": str(memory.vault.root)}
        full = [timed(["verify", "--full"], env) for _ in range(args.repeat)]
        incremental = []
        for _ in range(args.repeat):
            memory.add("one more note about the garden shed")
            memory.consolidate()
            incremental.append(timed(["verify"], env))
        for label, runs in (("verify --full", full), ("verify after one new consolidation", incremental)):
            cpu = statistics.median(c for c, _ in runs)
            wall = statistics.median(w for _, w in runs)
            print(f"{label:<36} {args.commits} commits: CPU {cpu:.2f} s, wall {wall:.2f} s (median of {len(runs)})")


if __name__ == "__main__":
    main()
