"""Large inputs that used to hang memd: CPU seconds per command, side by side.

    python bench/bench_hostile.py                      # this checkout, small sizes
    python bench/bench_hostile.py --size full          # the sizes people reported
    python bench/bench_hostile.py --compare ../main    # and another checkout, same inputs

Scenarios: ingesting a note of N one-line list items, ingesting a chat
export of M messages, and `memd list`, `memd lint` and `memd verify` over a
topic of T entries. Each command runs in its own process on a fresh vault;
the figure is the child's user+system CPU time (median of --repeat runs), so
other work on a shared machine does not inflate it. A command that runs past
--timeout is reported as ">TIMEOUT". The search index's first build over a
big topic is shown too: it is the index backend's own cost.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = {
    "small": {"items": 20_000, "messages": 10_000, "entries": 20_000, "indexed": 5_000},
    "full": {"items": 200_000, "messages": 100_000, "entries": 200_000, "indexed": 50_000},
}


def cpu_of(tree: Path, vault: Path, args: list[str], timeout: float) -> tuple[float | None, float]:
    """(child CPU seconds or None on timeout, wall seconds) of ``memd --vault VAULT ARGS``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "MEMD_LOCK_TIMEOUT": "60s", "PYTHONDONTWRITEBYTECODE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    try:
        # cwd outside both trees: `python -m` puts the working folder first on sys.path.
        subprocess.run(
            [sys.executable, "-m", "memd", "--vault", str(vault), *args],
            env=env,
            timeout=timeout,
            capture_output=True,
            check=False,
            cwd=vault.parent,
        )
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), time.monotonic() - started


def fresh_vault(tree: Path, where: Path) -> Path:
    if where.exists():
        shutil.rmtree(where)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run(
        [sys.executable, "-m", "memd", "init", str(where)], env=env, check=True, capture_output=True, cwd=where.parent
    )
    return where


def inputs(folder: Path, size: dict[str, int]) -> dict[str, Path]:
    note = folder / "items.md"
    note.write_text("".join(f"- item {i} about bed {i % 97}\n" for i in range(size["items"])))
    chat = folder / "chat.json"
    messages = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Message {i}: week {i % 52} plan for item {i % 500}.",
            "time": 1_700_000_000 + i * 60,
        }
        for i in range(size["messages"])
    ]
    chat.write_text(json.dumps(messages))
    return {"note": note, "chat": chat}


def topic_text(entries: int) -> str:
    lines = ["---", 'id: "huge"', 'summary: "a huge topic"', "---", "# Huge", ""]
    lines += [
        f"- <seq={i},time=2026-01-01T00:00:00Z,source=user> fact {i} about item{i % 977}" for i in range(1, entries + 1)
    ]
    return "\n".join(lines) + "\n"


def scenarios(
    tree: Path, work: Path, files: dict[str, Path], size: dict[str, int], timeout: float, repeat: int
) -> dict[str, list[float | None]]:
    results: dict[str, list[float | None]] = {}

    def record(name: str, value: float | None) -> None:
        results.setdefault(name, []).append(value)

    big = topic_text(size["entries"])
    indexed = topic_text(size["indexed"])
    for _ in range(repeat):
        vault = fresh_vault(tree, work / "v")
        record(f"ingest note, {size['items']:,} items", cpu_of(tree, vault, ["ingest", str(files["note"])], timeout)[0])
        vault = fresh_vault(tree, work / "v")
        record(
            f"ingest chat, {size['messages']:,} messages",
            cpu_of(tree, vault, ["ingest", str(files["chat"])], timeout)[0],
        )
        vault = fresh_vault(tree, work / "v")
        (vault / "topics" / "huge.md").write_text(big)
        for command in ("list", "lint", "verify"):
            record(f"{command}, topic of {size['entries']:,} entries", cpu_of(tree, vault, [command], timeout)[0])
        vault = fresh_vault(tree, work / "v")
        (vault / "topics" / "huge.md").write_text(indexed)
        record(
            f"first search, topic of {size['indexed']:,} entries (index build)",
            cpu_of(tree, vault, ["search", "item5"], timeout)[0],
        )
    return results


def shown(values: list[float | None], timeout: float) -> str:
    if any(v is None for v in values):
        return f">{timeout:.0f}"
    return f"{statistics.median(v for v in values if v is not None):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--compare", type=Path, help="another checkout to measure with the same inputs")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    size = SIZES[args.size]
    here = Path(__file__).resolve().parent.parent
    trees = {"this": here, **({"other": args.compare.resolve()} if args.compare else {})}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        files = inputs(work, size)
        table = {name: scenarios(tree, work, files, size, args.timeout, args.repeat) for name, tree in trees.items()}
    print(f"CPU seconds (user+sys of the memd process, median of {args.repeat}); sizes: {args.size}")
    header = f"{'scenario':58} {'this':>9}" + (f" {'other':>9} {'other/this':>10}" if "other" in table else "")
    print(header)
    for scenario, values in table["this"].items():
        line = f"{scenario:58} {shown(values, args.timeout):>9}"
        if "other" in table:
            other = table["other"][scenario]
            ratio = "-"
            if None not in values and None not in other:
                ratio = f"{statistics.median(other) / max(statistics.median(values), 1e-9):.1f}x"  # type: ignore[type-var]
            elif None in other and None not in values:
                ratio = f">{args.timeout / max(statistics.median(values), 1e-9):.1f}x"  # type: ignore[type-var]
            line += f" {shown(other, args.timeout):>9} {ratio:>10}"
        print(line)


if __name__ == "__main__":
    main()
