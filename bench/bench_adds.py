"""Sequential adds: the cost of `memd add` as a vault's buffer and history grow.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_adds.py                  # 1,000 adds in one process, 100 as separate processes
    python bench/bench_adds.py --adds 5000 --processes 0
    python bench/bench_adds.py --adds 0 --processes 41 --entries 100000   # into a vault of 100k entries
    python bench/bench_adds.py --adds 0 --processes 31 --against ../old   # side by side with another checkout

1. ``--adds`` calls of ``memd add`` one after another through click's test
   runner in this process (what a long-lived caller pays per add, and what the
   test suite runs): total wall and CPU seconds, and per-add medians of the
   first and last hundred, so growth with the buffer shows.
2. ``--processes`` separate ``python -m memd add`` processes into the same
   vault (interpreter start-up and imports included), each followed by a
   ``python -c pass`` so both see the same load: CPU (user + system) per
   process, median and p95 of each, and the add's median wall. With
   ``--against DIR`` each add is also run from the memd in checkout DIR
   (``PYTHONPATH``), interleaved, so both see the same load, each into a
   copy of the vault of its own.

The machine is shared: read CPU times, and the first/last ratio, more than wall times.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner
from percentiles import percentile

from memd.app.init import init_vault
from memd.cli import main as cli
from memd.vault.vault import RACY_SECONDS


def in_process(vault: Path, count: int) -> tuple[float, float, list[float]]:
    runner = CliRunner()
    each: list[float] = []
    wall, cpu = time.perf_counter(), time.process_time()
    for n in range(count):
        start = time.perf_counter()
        result = runner.invoke(cli, ["--vault", str(vault), "add", f"note {n}: the kettle descaler is under the sink"])
        if result.exit_code != 0:
            raise SystemExit(result.output)
        each.append(time.perf_counter() - start)
    return time.perf_counter() - wall, time.process_time() - cpu, each


def _cpu_of(command: list[str], cwd: Path, code: str | None = None) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one process (``code``: the checkout its memd comes from)."""
    env = {**os.environ, "PYTHONPATH": code} if code else None
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {process.stderr.read().decode() if process.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime


def processes(
    vault: Path, count: int, codes: list[str | None]
) -> tuple[dict[str | None, list[float]], dict[str | None, list[float]], list[float]]:
    """Walls and CPU seconds of ``count`` add processes from each checkout in ``codes``
    (None: the installed memd), and CPU seconds of as many bare interpreters.

    Each checkout adds into a copy of the vault of its own: what one keeps
    between adds (``.memd/seq.local``) may not be what the other reads, and
    shared, each add would find the other's. One unmeasured add each first,
    once the files are old enough for their stamps to be trusted, so every
    measured add finds the state its own previous add left."""
    vaults = {code: vault if n == 0 else vault.with_name(f"{vault.name}-{n}") for n, code in enumerate(codes)}
    for copy in vaults.values():
        if copy != vault:
            shutil.copytree(vault, copy, symlinks=True)
    time.sleep(RACY_SECONDS + 0.5)
    for code, copy in vaults.items():
        _cpu_of([sys.executable, "-m", "memd", "--vault", str(copy), "add", "first note"], copy, code)
    walls: dict[str | None, list[float]] = {code: [] for code in codes}
    cpus: dict[str | None, list[float]] = {code: [] for code in codes}
    bare = []
    for n in range(count):
        for code in codes:
            command = [sys.executable, "-m", "memd", "--vault", str(vaults[code]), "add", f"process note {n}"]
            wall, cpu = _cpu_of(command, vaults[code], code)
            walls[code].append(wall)
            cpus[code].append(cpu)
        bare.append(_cpu_of([sys.executable, "-c", "pass"], vault)[1])
    return walls, cpus, bare


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adds", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=100)
    parser.add_argument("--entries", type=int, default=0, help="topic entries in the vault first (bench_vectors.py's)")
    parser.add_argument("--against", metavar="DIR", help="also run each add from the memd of this checkout")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memd-adds-") as folder:
        vault = Path(folder) / "vault"
        if args.entries:
            from bench_vectors import write_vault

            write_vault(vault, args.entries, seed=3)
        # No consolidation in between: the buffer grows with every add, the worst case for an append.
        settings = '[consolidate]\nbuffer_tokens = 100000000\nbuffer_age = "365d"\n'
        init_vault(vault).vault.config_path.write_text(settings)
        if args.adds:
            wall, cpu, each = in_process(vault, args.adds)
            ms = [s * 1000 for s in each]
            print(f"{args.adds} sequential adds in one process: {wall:.1f} s wall, {cpu:.1f} s CPU")
            first, last = statistics.median(ms[:100]), statistics.median(ms[-100:])
            print(f"  per add, median: first 100 {first:.1f} ms, last 100 {last:.1f} ms")
        if args.processes:
            codes: list[str | None] = [None] if not args.against else [None, str(Path(args.against).resolve())]
            walls, cpus, bare = processes(vault, args.processes, codes)
            for code in codes:
                ms, wall_ms = [s * 1000 for s in cpus[code]], [s * 1000 for s in walls[code]]
                print(
                    f"{args.processes} `memd add` processes{f' from {code}' if code else ''} into a vault of "
                    f"{args.entries:,} entries: CPU median {statistics.median(ms):.1f} ms, "
                    f"p95 {percentile(ms, 0.95):.1f} ms; "
                    f"wall median {statistics.median(wall_ms):.0f} ms"
                )
            bare_ms = [s * 1000 for s in bare]
            print(
                f"  `python -c pass` after each: CPU median {statistics.median(bare_ms):.1f} ms, "
                f"p95 {percentile(bare_ms, 0.95):.1f} ms"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
