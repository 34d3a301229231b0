"""What a `memd search` costs as a process, with the daemon answering and without.

Usage: python bench/bench_serve.py [--entries 2000] [--runs 21]
       python bench/bench_serve.py --entries 100000 --synthetic

Builds a vault of chat-like entries (consolidated and indexed, vectors
included), then runs `memd search` as a separate process with distinct
queries: in rounds, once with `memd daemon` running (the search is answered
over `.memd/serve.sock`) and once without (the process opens the index, the
model and the vectors itself), alternating, beside `python -c pass`. Prints
CPU per search (p50 / p95, user + system, from the kernel's accounting): the
search process itself, and with the daemon also the daemon's CPU for that
search (from /proc), so the sum is the whole cost.

With ``--synthetic`` the vault is bench_vectors.py's (topic files of chat-like
entries written directly) and its vectors are 2,000 real ones cycled with a
little noise, since embedding 100,000 entries takes most of an hour; the
product over them costs what one over real vectors does. It also prints
tantivy's own CPU per query on the vault's index, in this process (the
query's words through memd's analysis, each in every text field, the 10 best).
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

from percentiles import percentile

WORDS = (
    "coffee oat milk kyoto flight april pottery class kiln bowl dance studio store customers basketball "
    "ankle injury book garden tomatoes beagle walk lake job interview sister wedding recipe lentil dal"
).split()


def child_cpu(command: list[str], cwd: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def daemon_pid(vault: Path) -> int:
    import json

    return int(json.loads((vault / ".memd" / "daemon.json").read_text())["pid"])


def settle(pid: int, quiet_ms: float = 20.0, most_seconds: float = 300.0) -> None:
    """Wait until the process spends less than ``quiet_ms`` of CPU in a second."""
    deadline = time.monotonic() + most_seconds
    while time.monotonic() < deadline:
        before = process_cpu(pid)
        time.sleep(1.0)
        if process_cpu(pid) - before < quiet_ms:
            return


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=21, help="searches per mode")
    parser.add_argument("--synthetic", action="store_true", help="bench_vectors.py's vault, synthesised vectors")
    args = parser.parse_args()
    memd = [sys.executable, "-m", "memd"]
    rng = random.Random(5)
    with tempfile.TemporaryDirectory(prefix="memd-serve-", dir="/tmp") as folder:
        vault = Path(folder) / "v"
        if args.synthetic:
            queries = synthetic_vault(vault, args.entries, 4 * args.runs)
        else:
            subprocess.run([*memd, "init", str(vault)], check=True, stdout=subprocess.DEVNULL)
            lines = [" ".join(rng.choices(WORDS, k=rng.randint(4, 10))) for _ in range(args.entries)]
            subprocess.run(
                [*memd, "add", "-"], input="\n".join(lines), text=True, cwd=vault, check=True, stdout=subprocess.DEVNULL
            )
            subprocess.run([*memd, "consolidate"], cwd=vault, check=True, stdout=subprocess.DEVNULL)
            subprocess.run([*memd, "reindex"], cwd=vault, check=True, stdout=subprocess.DEVNULL)
            queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(4 * args.runs)]
        engine = tantivy_alone(vault, queries) if args.synthetic else None
        served: list[float] = []
        daemon_side: list[float] = []
        alone: list[float] = []
        start: list[float] = []
        rounds = 3
        per_round = max(1, args.runs // rounds)
        for _ in range(rounds):
            subprocess.run([*memd, "daemon", "start"], cwd=vault, check=True, stdout=subprocess.DEVNULL)
            time.sleep(2.0)
            pid = daemon_pid(vault)
            settle(pid)  # its start-up work (catching up with the files) is not a search's
            subprocess.run([*memd, "search", "warm up"], cwd=vault, check=True, stdout=subprocess.DEVNULL)
            for _ in range(per_round):
                before = process_cpu(pid)
                served.append(child_cpu([*memd, "search", queries.pop()], vault))
                daemon_side.append(process_cpu(pid) - before)
                start.append(child_cpu([sys.executable, "-c", "pass"], vault))
            subprocess.run([*memd, "daemon", "stop"], cwd=vault, check=True, stdout=subprocess.DEVNULL)
            for _ in range(per_round):
                alone.append(child_cpu([*memd, "search", queries.pop()], vault))
                start.append(child_cpu([sys.executable, "-c", "pass"], vault))
        total = [a + b for a, b in zip(served, daemon_side, strict=True)]
        print(f"{args.entries} entries, {len(served)} searches per mode, CPU ms p50 / p95")
        for label, values in [
            ("python -c pass", start),
            ("memd search, no daemon", alone),
            ("memd search, daemon answers", served),
            ("  the daemon's part", daemon_side),
            ("  both together", total),
            *([("tantivy alone, in-process", engine)] if engine else []),
        ]:
            print(f"  {label:30} {statistics.median(values):7.1f} / {percentile(values, 0.95):7.1f}")


def synthetic_vault(root: Path, entries: int, count: int) -> list[str]:
    """bench_vectors.py's vault at ``root``, indexed, with synthesised vectors; ``count`` queries."""
    import bench_vectors as vectors

    from memd.index.embedding import load_embedder

    vault = vectors.write_vault(root, entries, seed=3)
    lines = [line for path in sorted(vault.topic_files())[:40] for line in path.read_text().splitlines()]
    said = [line.split("> ", 1)[1] for line in lines if line.startswith("- <seq=")]
    real = load_embedder("minilm-l6").embed(said[:2000])
    vectors.synthetic_vectors(vault, real)
    # Committed, as a vault memd wrote would be: the daemon has no hand edits to commit.
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["git", "commit", "-qm", "bench vault"], cwd=root, check=True, stdout=subprocess.DEVNULL)
    return vectors.queries(count)


def tantivy_alone(root: Path, queries: list[str]) -> list[float]:
    """CPU ms of tantivy's own search for each query (after one warm-up each), in this process."""
    import tantivy

    from memd.index import IndexStore
    from memd.index.analysis import analyse
    from memd.index.tantivy_schema import TEXT_FIELDS
    from memd.vault.vault import find_vault

    store = IndexStore(find_vault(root))
    folder = store.engine_dir
    store.close()
    index = tantivy.Index.open(str(folder))
    searcher = index.searcher()
    spent = []
    for warm in (True, False):
        for query in queries:
            words = analyse(query) or ["none"]
            clock = time.process_time()
            parsed = index.parse_query(" OR ".join(words), list(TEXT_FIELDS))
            searcher.search(parsed, 10)
            if not warm:
                spent.append((time.process_time() - clock) * 1000)
    return spent


if __name__ == "__main__":
    main()
