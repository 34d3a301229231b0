"""Vectors kept in segments, before and after: embedding throughput, a first index, edit -> searchable.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_vector_segments.py                          # before = main, 10k records
    python bench/bench_vector_segments.py --before 8152e9c --sizes 10000 100000
    python bench/bench_vector_segments.py --first 2000             # a smaller first index

Each side runs in its own processes with PYTHONPATH on that tree (``--before``:
a git revision exported to a temporary folder; after: this worktree), on the
same generated vaults (bench_vectors.write_vault: chat-like entries, 50 a file):

1. texts/s: ``embed_many`` over 2,000 distinct entry texts (CPU and wall).
2. first index: ``IndexStore.sync`` of a fresh ``--first``-record vault,
   vectors included, CPU seconds (all threads) and wall.
3. edit -> searchable: in one long-lived store (as the daemon or the MCP
   server keeps), one entry of one file is changed by hand, then the store is
   synced and one search run; CPU and wall of that, median of ``--edits``
   edits, and the bytes written under ``.memd/index`` per edit. At 10k the
   vectors are real; past it they are synthesised from the 10k ones as
   bench_vectors does (a product over them costs what one over real ones does),
   written in the old single-file form, which both sides read.

The machine is shared: compare the two sides of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from revision import extract

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def written(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.rglob("*") if p.is_file()}


# -- the measuring side (run with PYTHONPATH on one tree) ---------------------------
def measure_texts(count: int) -> dict[str, float]:
    sys.path.insert(0, str(HERE))
    from bench_vectors import write_vault

    from memd.index.embedding import embed_many, load_embedder
    from memd.index.records import indexed_records

    with tempfile.TemporaryDirectory() as folder:
        vault = write_vault(Path(folder) / "v", count, seed=3)
        paths = sorted(vault.topics_dir.glob("*.md"))
        texts = [r.text for p in paths for r in indexed_records(vault.root, vault.rel_of(p))[1] if r.seq]
    model = load_embedder("minilm-l6")
    model.embed(["warm up"])
    wall, spent = time.perf_counter(), cpu()
    embed_many(model, texts[:count])
    wall, spent = time.perf_counter() - wall, cpu() - spent
    return {"texts": len(texts[:count]), "cpu": spent, "wall": wall}


def measure_first(root: str) -> dict[str, float]:
    from memd.index import IndexStore
    from memd.vault.vault import find_vault

    vault = find_vault(Path(root))
    store = IndexStore(vault)
    wall, spent = time.perf_counter(), cpu()
    report = store.sync()
    wall, spent = time.perf_counter() - wall, cpu() - spent
    store.close()
    return {"records": report.records, "embedded": report.embedded, "cpu": spent, "wall": wall}


def measure_edits(root: str, edits: int) -> dict[str, Any]:
    from memd.index import IndexStore
    from memd.index.retrieve import retrieve
    from memd.vault.vault import find_vault

    vault = find_vault(Path(root))
    store = IndexStore(vault)
    store.sync()
    retrieve(store.backend(), "warm up the query path")
    files = sorted(vault.topics_dir.glob("*.md"))
    cpus, walls, sizes, embedded = [], [], [], []
    for n in range(edits):
        path = files[(n * 37) % len(files)]
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        row = next(i for i, line in enumerate(lines) if line.startswith("- <seq="))
        lines[row] = lines[row].rstrip("\n") + f" Edited by hand {n}.\n"
        path.write_text("".join(lines), encoding="utf-8")
        before = written(vault.index_dir)
        wall, spent = time.perf_counter(), cpu()
        report = store.sync()
        retrieve(store.backend(), f"edited by hand {n}")
        walls.append(time.perf_counter() - wall)
        cpus.append(cpu() - spent)
        after = written(vault.index_dir)
        sizes.append(sum(size for name, (stamp, size) in after.items() if before.get(name) != (stamp, size)))
        embedded.append(report.embedded)
    store.close()
    return {
        "cpu": statistics.median(cpus),
        "wall": statistics.median(walls),
        "bytes": statistics.median(sizes),
        "embedded": statistics.median(embedded),
    }


# -- the driver ---------------------------------------------------------------------
def side(tree: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, __file__, "--measure", *args], env=env, capture_output=True, text=True, check=False
    )
    if out.returncode:
        raise SystemExit(f"{tree}: {out.stderr[-2000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def export(rev: str, folder: Path) -> Path:
    return extract(rev, folder / "before")


def synthesise(vault_root: Path, real_from: Path) -> None:
    """Vectors for a large vault made from the 10k real ones, in the single-file form both sides read."""
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    import numpy as np
    from bench_vectors import synthetic_vectors

    from memd.index.segment import Segment
    from memd.vault.vault import find_vault

    real = np.array(Segment.load(real_from / ".memd" / "index" / "vectors.npz", "minilm-l6", 384).matrix)
    synthetic_vectors(find_vault(vault_root), real)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default="main", help="the git revision measured as 'before'")
    parser.add_argument("--first", type=int, default=10_000, help="records of the first-index vault")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000], help="vault sizes for edit -> searchable")
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--measure", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        kind, *rest = args.measure
        if kind == "texts":
            result = measure_texts(int(rest[0]))
        elif kind == "first":
            result = measure_first(rest[0])
        else:
            result = measure_edits(rest[0], int(rest[1]))
        print(json.dumps(result))
        return

    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    from bench_vectors import write_vault

    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="memd-bench-") as name:
        folder = Path(name)
        trees = {"before": export(args.before, folder), "after": ROOT}
        results = {key: side(tree, "texts", str(args.texts)) for key, tree in trees.items()}
        speeds = [f"{r['texts'] / r['wall']:.0f} ({r['cpu']:.1f})" for r in results.values()]
        rows.append(("embedding, texts/s (CPU s)", *speeds))
        first = write_vault(folder / "first", args.first, seed=args.first)
        copies = {key: folder / f"first-{key}" for key in trees}
        for copy in copies.values():
            shutil.copytree(first.root, copy, symlinks=True)
        results = {key: side(tree, "first", str(copies[key])) for key, tree in trees.items()}
        rows.append(
            (
                f"first index, {args.first:,} entries: CPU s (wall s)",
                *(f"{r['cpu']:.0f} ({r['wall']:.0f})" for r in results.values()),
            )
        )
        built = copies["before"]  # the single-file form: what both sides read
        for size in args.sizes:
            if size == args.first:
                source = built
            else:
                source = write_vault(folder / f"v{size}", size, seed=size).root
                synthesise(source, built)
            results = {}
            for key, tree in trees.items():
                copy = folder / f"edit-{size}-{key}"
                shutil.copytree(source, copy, symlinks=True)
                results[key] = side(tree, "edits", str(copy), str(args.edits))
                shutil.rmtree(copy)
            rows.append(
                (
                    f"edit -> searchable, {size:,} entries: CPU s (wall s), MB written",
                    *(f"{r['cpu']:.2f} ({r['wall']:.2f}), {r['bytes'] / 1e6:.1f}" for r in results.values()),
                )
            )
    width = max(len(row[0]) for row in rows)
    print(f"{'':<{width}}  {'before (' + args.before + ')':<28}  after")
    for label, before, after in rows:
        print(f"{label:<{width}}  {before:<28}  {after}")


if __name__ == "__main__":
    main()
