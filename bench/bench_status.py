"""CPU of `memd status` as its own process with a large buffer.

Usage: python bench/bench_status.py [--entries 36000] [--repeat 7] [--against DIR]

Builds a vault whose CURRENT.md holds ``--entries`` acknowledged entries (one
`memd add` of that many lines), runs one `memd status` so whatever status keeps
between runs is there, then times `memd status` ``--repeat`` times: CPU seconds
(user + system) of the child process. With ``--against DIR`` (another checkout)
the two run in turn, so their medians and ratio are measured side by side;
``python -c pass`` is timed the same way as the floor of any process.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def cpu(command: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # `python -m` puts the working folder first on the path: each checkout runs from its own.
    subprocess.run(command, env=env, check=True, capture_output=True, cwd=env.get("PYTHONPATH"))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=36000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--against", type=Path, help="another checkout, timed in turn with this one")
    args = parser.parse_args()
    checkouts = {"this": HERE, **({"against": args.against.resolve()} if args.against else {})}
    with tempfile.TemporaryDirectory(prefix="memd-status-") as folder:
        vault = Path(folder) / "vault"
        env = {**os.environ, "PYTHONPATH": str(HERE)}
        run = [sys.executable, "-m", "memd", "--vault", str(vault)]
        subprocess.run([sys.executable, "-m", "memd", "init", str(vault)], env=env, check=True, capture_output=True)
        lines = "".join(f"Remembered thing number {n} about the garden and the shed\n" for n in range(args.entries))
        subprocess.run([*run, "add"], input=lines, text=True, env=env, check=True, capture_output=True)
        times: dict[str, list[float]] = {name: [] for name in [*checkouts, "python -c pass"]}
        for root in checkouts.values():  # one status each first: what status keeps between runs is there
            cpu([*run, "status"], {**os.environ, "PYTHONPATH": str(root)})
        for _ in range(args.repeat):
            for name, root in checkouts.items():
                times[name].append(cpu([*run, "status"], {**os.environ, "PYTHONPATH": str(root)}))
            times["python -c pass"].append(cpu([sys.executable, "-c", "pass"], dict(os.environ)))
    floor = statistics.median(times["python -c pass"])
    print(f"memd status with {args.entries} entries buffered, CPU seconds, median of {args.repeat}:")
    for name, found in times.items():
        median = statistics.median(found)
        spread = f"min {min(found):.3f}, max {max(found):.3f}"
        print(f"  {name:15s} {median:.3f}  ({spread}, {median / floor:.1f}x python -c pass)")
    if args.against:
        print(f"  ratio this / against: {statistics.median(times['this']) / statistics.median(times['against']):.2f}")


if __name__ == "__main__":
    main()
