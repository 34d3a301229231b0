"""Appends never wait for a consolidation: time `memd add` while one runs.

Usage: python bench/bench_add_during_consolidation.py [--tokens 50000] [--adds 100]

Fills a fresh vault's buffer with ``--tokens`` tokens of notes, starts a
consolidation whose judgement steps take ``--step-latency`` seconds each (as a
model's would), and while it runs makes ``--adds``
separate `memd add` calls (each a new process, as a hook or script would),
timing each one's wall time. Prints the distribution, how many calls
overlapped the consolidation, and checks every added entry is in the vault.
Both in-process adds (``memd.Memory.add``) and separate `memd add` processes are timed.
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
from typing import Any

from bench_consolidate import FILLER, SUBJECTS  # the same notes as the consolidation benchmark
from percentiles import percentile

from memd import Memory
from memd.app.init import init_vault
from memd.consolidation import consolidate
from memd.engine.offline import OfflineEngine
from memd.vault.buffer import NewEntry, append_entries
from memd.vault.buffer_status import buffer_status
from memd.vault.vault import Vault

WORDS = [w for words in SUBJECTS.values() for w in words.split()]


def note() -> str:
    subject = random.choice(list(SUBJECTS))
    words = random.sample(SUBJECTS[subject].split(), 4) + random.sample(FILLER, 4) + [str(random.randint(1, 999))]
    random.shuffle(words)
    return " ".join(words)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=50_000)
    parser.add_argument("--adds", type=int, default=100)
    parser.add_argument(
        "--step-latency",
        type=float,
        default=0.5,
        help="seconds each judgement step takes (a model's latency); 0 = the offline engine as is",
    )
    parser.add_argument("--consolidate-only", metavar="VAULT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.consolidate_only:  # the consolidation's own process
        print(consolidate(Vault(Path(args.consolidate_only)), engine=Slow(args.step_latency)).subject)
        return
    random.seed(7)
    with tempfile.TemporaryDirectory() as tmp:
        vault = init_vault(Path(tmp) / "vault").vault
        vault.config_path.write_text(f"[consolidate]\nbuffer_tokens = {args.tokens}\n")
        while buffer_status(vault).tokens < args.tokens:
            append_entries(vault, [NewEntry(note()) for _ in range(400)])
        print(f"buffer: {buffer_status(vault).entries} entries, {buffer_status(vault).tokens} tokens")
        env = {**os.environ, "MEMD_VAULT": str(vault.root)}
        started = time.monotonic()
        # The consolidation runs in a process of its own with an engine whose steps
        # take time, as a model's would.
        worker = subprocess.Popen(
            [sys.executable, __file__, "--consolidate-only", str(vault.root), "--step-latency", str(args.step_latency)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.5)  # let it take its snapshot
        memory = Memory.open(vault.root)
        inproc: list[float] = []
        overlapped = 0
        n = 0
        while n < args.adds:
            t0 = time.perf_counter()
            memory.add(f"benchmark note {n} {random.choice(WORDS)}")
            inproc.append(time.perf_counter() - t0)
            overlapped += worker.poll() is None
            n += 1
            time.sleep(0.02)
        # Separate `memd add` processes (a hook or a shell script): interpreter start-up included.
        procs: list[float] = []
        proc_overlapped = 0
        while (worker.poll() is None) or len(procs) < 10:
            t0 = time.perf_counter()
            result = subprocess.run(
                [sys.executable, "-m", "memd", "add", f"benchmark note {n} {random.choice(WORDS)}"],
                env=env,
                capture_output=True,
            )
            procs.append(time.perf_counter() - t0)
            proc_overlapped += worker.poll() is None
            if result.returncode != 0:
                print(f"add {n} failed: {result.stderr.decode().strip()}")
            n += 1
            if len(procs) >= 200:
                break
        out, err = worker.communicate()
        took = time.monotonic() - started
        text = "\n".join(p.read_text() for p in vault.entry_files())
        missing = [k for k in range(n) if f"benchmark note {k} " not in text]
        subject = out.strip() or f"failed: {err.strip()[-300:]}"
        print(f"consolidation: {took:.1f} s wall ({subject})")
        report("Memory.add in process", inproc, overlapped)
        report("`memd add` processes", procs, proc_overlapped)
        print(f"entries missing afterwards: {len(missing)} of {n}")


class Slow(OfflineEngine):
    """The offline engine, each judgement step taking ``latency`` seconds."""

    def __init__(self, latency: float) -> None:
        super().__init__()
        self.latency = latency

    def plan(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.latency)
        return super().plan(*args, **kwargs)

    def update_topic(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.latency)
        return super().update_topic(*args, **kwargs)

    def summarise_many(self, topics: Any) -> Any:
        time.sleep(self.latency * len(topics))
        return super().summarise_many(topics)


def report(label: str, walls: list[float], overlapped: int) -> None:
    ms = sorted(w * 1000 for w in walls)
    print(
        f"{label} x{len(ms)} ({overlapped} while the consolidation ran), wall ms: min {ms[0]:.1f}  "
        f"p50 {statistics.median(ms):.1f}  p95 {percentile(ms, 0.95):.1f}  max {ms[-1]:.1f}  "
        f"(over 200 ms: {sum(m > 200 for m in ms)})"
    )


if __name__ == "__main__":
    main()
