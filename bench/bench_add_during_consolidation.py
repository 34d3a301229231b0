"""Appends never wait for a consolidation: time `memd add` while one runs.

Usage: python bench/bench_add_during_consolidation.py [--tokens 50000] [--adds 100]

Fills a fresh vault's buffer with ``--tokens`` tokens of notes, starts
`memd consolidate` in a separate process, and while it runs makes ``--adds``
separate `memd add` calls (each a new process, as a hook or script would),
timing each one's wall time. Prints the distribution, how many calls
overlapped the consolidation, and checks every added entry is in the vault.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memd.buffer import NewEntry, append_entries, buffer_status
from memd.setup import init_vault

WORDS = (
    "garden tomatoes basil compost marathon knee intervals sourdough oven lentils deadline migration invoices "
    "flight hotel passport guitar chords concert sister birthday doctor allergy novel library budget savings "
    "dog vet kitchen paint boiler window river cedar lantern meadow quartz harbor violet"
).split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=50_000)
    parser.add_argument("--adds", type=int, default=100)
    args = parser.parse_args()
    random.seed(7)
    with tempfile.TemporaryDirectory() as tmp:
        vault = init_vault(Path(tmp) / "vault").vault
        vault.config_path.write_text(f"[consolidate]\nbuffer_tokens = {args.tokens}\n")
        batch = [NewEntry(" ".join(random.choices(WORDS, k=12))) for _ in range(400)]
        while buffer_status(vault).tokens < args.tokens:
            append_entries(vault, batch)
        print(f"buffer: {buffer_status(vault).entries} entries, {buffer_status(vault).tokens} tokens")
        env = {**os.environ, "MEMD_VAULT": str(vault.root)}
        started = time.monotonic()
        consolidation = subprocess.Popen([sys.executable, "-m", "memd", "consolidate"], env=env,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.5)  # let it take its snapshot
        walls: list[float] = []
        overlapped = 0
        for n in range(args.adds):
            t0 = time.monotonic()
            result = subprocess.run([sys.executable, "-m", "memd", "add", f"benchmark note {n} {random.choice(WORDS)}"],
                                    env=env, capture_output=True)
            walls.append(time.monotonic() - t0)
            if result.returncode != 0:
                print(f"add {n} failed: {result.stderr.decode().strip()}")
            if consolidation.poll() is None:
                overlapped += 1
        consolidation.wait()
        took = time.monotonic() - started
        text = "\n".join(p.read_text() for p in vault.entry_files())
        missing = [n for n in range(args.adds) if f"benchmark note {n} " not in text]
        walls.sort()
        ms = [w * 1000 for w in walls]
        print(f"consolidation: exit {consolidation.returncode}, {took:.1f} s wall")
        print(f"memd add x{len(ms)}: {overlapped} ran while the consolidation ran")
        print(f"  wall ms: min {ms[0]:.0f}  p50 {statistics.median(ms):.0f}  p95 {ms[int(0.95 * len(ms)) - 1]:.0f}"
              f"  max {ms[-1]:.0f}  (over 200 ms: {sum(m > 200 for m in ms)})")
        print(f"  entries missing afterwards: {len(missing)}")


if __name__ == "__main__":
    main()
