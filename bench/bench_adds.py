"""Sequential adds: the cost of `memd add` as a vault's buffer and history grow.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_adds.py                  # 1,000 adds in one process, 100 as separate processes
    python bench/bench_adds.py --adds 5000 --processes 0

1. ``--adds`` calls of ``memd add`` one after another through click's test
   runner in this process (what a long-lived caller pays per add, and what the
   test suite runs): total wall and CPU seconds, and per-add medians of the
   first and last hundred, so growth with the buffer shows.
2. ``--processes`` separate ``python -m memd add`` processes into the same
   vault (interpreter start-up and imports included): median and p95 wall.

The machine is shared: read CPU times, and the first/last ratio, more than wall times.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner

from memd.app.init import init_vault
from memd.cli import main as cli


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


def processes(vault: Path, count: int) -> list[float]:
    walls = []
    for n in range(count):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "memd", "--vault", str(vault), "add", f"process note {n}"],
            check=True,
            capture_output=True,
            cwd=vault,
        )
        walls.append(time.perf_counter() - start)
    return walls


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adds", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=100)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memd-adds-") as folder:
        vault = Path(folder) / "vault"
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
            walls = sorted(s * 1000 for s in processes(vault, args.processes))
            p95 = walls[int(0.95 * (len(walls) - 1))]
            middle = statistics.median(walls)
            print(f"{args.processes} `memd add` processes: median {middle:.0f} ms, p95 {p95:.0f} ms wall")


if __name__ == "__main__":
    main(sys.argv[1:])
