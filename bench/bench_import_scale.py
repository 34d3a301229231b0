"""A long chat imported, then searched: what each step costs at scale.

Usage: python bench/bench_import_scale.py [--turns 40000]

A chat transcript of ``--turns`` turns (a JSON list of role/content messages,
two speakers, one to three sentences of chat words per turn, every turn
distinct) is ingested into a fresh vault with ``memd ingest``; then the first
``memd search`` runs (it indexes the words and answers from them, embedding
vectors for about 3 CPU seconds and saying how far they are), then ``memd
reindex`` builds every vector. Each step is a process of its own: wall and
CPU seconds (user + system of the process and its children), with the
index's record and vector counts after each. Each imported turn lives once
in the index: as the entry made from it, not again in the source copy
(``memd/index/citations.py``).

``--repeat N`` then builds the whole index N more times from nothing (the
derived ``.memd/index`` removed before each ``memd reindex``, as a fresh clone
has it) and prints each build's CPU and wall seconds with their median, so
that a first-index figure is a median of runs, not one run.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORDS = (
    "coffee oat milk kyoto flight april pottery class kiln bowl dance studio store customers basketball ankle "
    "injury book garden tomatoes beagle walk lake job interview sister wedding recipe lentil dal painting "
    "camping trip beach sunset guitar concert friends family kids school project deadline meeting budget "
    "doctor appointment gym running marathon bike repair apartment lease neighbour party birthday gift"
).split()


def step(command: list[str], cwd: Path) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, done.stderr.strip()


def index_status(vault: Path, memd: list[str]) -> dict[str, Any]:
    """The index part of ``memd status --json``: its summary, record count and problem."""
    done = subprocess.run([*memd, "status", "--json"], cwd=vault, capture_output=True)
    return dict(json.loads(done.stdout)["index"])


def blas_kernel() -> str:
    """The kernel numpy's BLAS runs in a child process (as memd's steps do): the products that
    embedding spends its time in run about twice as fast on an AVX-512 kernel as on an AVX2 one,
    and an ``OPENBLAS_CORETYPE`` in the environment overrides what the library would pick."""
    probe = (
        "import numpy, threadpoolctl; i = threadpoolctl.threadpool_info();"
        " print(i[0].get('architecture', '?') if i else '?')"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return done.stdout.strip() or "?"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=0, help="whole index builds from nothing, after the steps")
    args = parser.parse_args()
    rng = random.Random(11)
    memd = [sys.executable, "-m", "memd"]
    with tempfile.TemporaryDirectory(prefix="memd-import-") as folder:
        vault = Path(folder) / "v"
        subprocess.run([*memd, "init", str(vault)], check=True, stdout=subprocess.DEVNULL)
        chat = []
        for n in range(args.turns):
            sentences = [" ".join(rng.choices(WORDS, k=rng.randint(4, 12))) for _ in range(rng.randint(1, 3))]
            text = f"Turn {n}: " + ". ".join(s.capitalize() for s in sentences) + "."
            chat.append({"role": "user" if n % 2 == 0 else "assistant", "content": text})
        source = Path(folder) / "chat.json"
        source.write_text(json.dumps(chat))
        print(f"{args.turns:,} turns; BLAS kernel {blas_kernel()}")
        for name, command in [
            ("ingest", [*memd, "ingest", str(source)]),
            ("first search", [*memd, "search", "pottery class kiln"]),
            ("reindex (every vector)", [*memd, "reindex"]),
            ("search", [*memd, "search", "beagle walk lake"]),
        ]:
            wall, cpu, said = step(command, vault)
            index = index_status(vault, memd)["summary"]
            note = f"  ({said.splitlines()[-1][:120]})" if said else ""
            print(f"  {name:24s} {wall:8.1f} s wall {cpu:8.1f} s CPU   index: {index}{note}")
        if args.repeat:
            builds(vault, memd, args.repeat)


def builds(vault: Path, memd: list[str], runs: int) -> None:
    """``runs`` whole index builds from nothing, each checked complete (every record has its vector)."""
    cpus: list[float] = []
    walls: list[float] = []
    print(f"whole index built {runs} times from nothing (`memd reindex` with no .memd/index):", flush=True)
    for run in range(1, runs + 1):
        shutil.rmtree(vault / ".memd" / "index")
        wall, cpu, _ = step([*memd, "reindex"], vault)
        index = index_status(vault, memd)
        if index["problem"] or not re.search(r"; [\d,]+ vectors$", index["summary"]):
            raise SystemExit(f"build {run} left the index incomplete: {index['summary']}")
        cpus.append(cpu)
        walls.append(wall)
        print(f"  build {run:2d}  {wall:8.1f} s wall {cpu:8.1f} s CPU   index: {index['summary']}", flush=True)
    print(
        f"  median of {runs}: {statistics.median(cpus):.1f} s CPU (min {min(cpus):.1f}, max {max(cpus):.1f}), "
        f"{statistics.median(walls):.1f} s wall (min {min(walls):.1f}, max {max(walls):.1f})"
    )


if __name__ == "__main__":
    main()
