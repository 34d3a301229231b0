"""`memd search` as a process of its own (no daemon): its CPU against `python -c pass`,
and the regular expressions it compiles, for this checkout and another revision side by side.

Not a test: run by hand and copy the figures into commit messages.

    python bench/bench_search_process.py                        # 10,000 entries, built in a scratch folder
    python bench/bench_search_process.py --against HEAD~1 --repeat 21
    python bench/bench_search_process.py --vault DIR --keep     # an indexed vault of your own
    python bench/bench_search_process.py --vault DIR --words-only  # no model (MEMD_EMBEDDING=none)
    python bench/bench_search_process.py --vault DIR --warm        # also with the warm server answering

The vault is the one bench/bench_vectors.py writes (chat-like entries), indexed
once with this checkout's code, vectors included when the model is installed
(``--keep DIR`` keeps it there and reuses it). Each round runs, one after the
other and in the same order: ``python -c pass``, then ``python -m memd
--vault V search Q`` with each checkout first on the path (``PYTHONPATH``; the
working folder is the vault, so ``-m`` finds no other memd), a distinct query
per round, with no warm server (``MEMD_WARM_SECONDS=0``). CPU is user+sys of
the child (``getrusage``), median over rounds; the ratio to ``python -c pass``
and between the two checkouts is taken from those medians.

With ``--warm``, this checkout's searches are then run again with the warm
server a first search starts (memd/daemon/warm.py) answering them: each
search's CPU is its own process's plus the server's for that search (from
/proc), and the first search's (which starts the server) and the server's
start-up are printed on their own.

Then, per checkout, the same search in processes that count the regular
expressions compiled (``re`` and ``regex``, each pattern once): how many and
the CPU spent compiling them, at module level (during imports) and later, per
module, medians of ``--pattern-runs`` processes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from revision import extract

REPO = Path(__file__).resolve().parent.parent

_COUNT = r"""
import collections, re, sys, time
stats = collections.defaultdict(lambda: [0, 0.0])
seen = set()
SKIP = {"re", "re._compiler", "re._parser", "regex", "regex.regex", "regex._regex_core", "functools"}
def wrap(module):
    original = module._compile
    def compiled(pattern, flags=0, *args, **kwargs):
        fresh = isinstance(pattern, (str, bytes)) and (module.__name__, pattern, flags) not in seen
        started = time.process_time()
        result = original(pattern, flags, *args, **kwargs)
        spent = time.process_time() - started
        if fresh:
            seen.add((module.__name__, pattern, flags))
            frame = sys._getframe(1)
            while frame.f_globals.get("__name__") in SKIP:
                frame = frame.f_back
            key = (frame.f_globals.get("__name__", "?"), frame.f_code.co_name == "<module>")
            stats[key][0] += 1
            stats[key][1] += spent
        return result
    module._compile = compiled
wrap(re)
try:
    import regex.regex
    wrap(regex.regex)
except ImportError:
    pass
sys.argv = ["memd", *sys.argv[1:]]
from memd.cli.launch import main
try:
    main()
except SystemExit:
    pass
sys.stdout.flush()
print("\x1e" + json.dumps([[m, top, n, s] for (m, top), (n, s) in stats.items()]), file=sys.stderr)
""".replace("import collections,", "import collections, json,")


def child_cpu(args: list[str], env: dict[str, str], cwd: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, env=env, cwd=cwd, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def build(root: Path, entries: int) -> Path:
    sys.path.insert(0, str(REPO / "bench"))
    from bench_vectors import write_vault

    from memd.index import IndexStore

    vault = write_vault(root, entries, seed=1)
    store = IndexStore(vault)
    report = store.rebuild()
    store.close()
    print(f"vault: {entries:,} entries, {report.records:,} records, {report.embedded:,} texts embedded", flush=True)
    return vault.root


def patterns(code: Path, vault: Path, query: str, runs: int, env: dict[str, str]) -> list[tuple[str, bool, int, float]]:
    """(module, at module level, patterns, CPU seconds compiling them): the median of ``runs`` processes."""
    env = {**env, "PYTHONPATH": str(code)}
    seen: dict[tuple[str, bool], list[tuple[int, float]]] = {}
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _COUNT, "--vault", str(vault), "search", query],
            env=env,
            cwd=vault,
            check=True,
            capture_output=True,
            text=True,
        )
        for module, top, count, spent in json.loads(done.stderr.rsplit("\x1e", 1)[1]):
            seen.setdefault((str(module), bool(top)), []).append((int(count), float(spent)))
    return [
        (module, top, max(c for c, _ in found), statistics.median([s for _, s in found] + [0.0] * (runs - len(found))))
        for (module, top), found in seen.items()
    ]


def process_cpu(pid: int) -> float:
    """CPU seconds (user+sys) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop_warm(vault: Path) -> None:
    """Stop a warm server an earlier run left answering this vault: a plain search must run alone."""
    import time

    sock = vault / ".memd" / "serve.sock"
    with contextlib.suppress(OSError, ValueError):
        os.kill(int((vault / ".memd" / "daemon.warm.lock").read_text()), 15)
    deadline = time.monotonic() + 30
    while sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    sock.unlink(missing_ok=True)


def warm(vault: Path, env: dict[str, str], queries: list[str], repeat: int, base: float) -> None:
    """This checkout's searches with the warm server answering: process + server CPU each."""
    import time

    env = {**env, "MEMD_WARM_SECONDS": "600"}
    sock = vault / ".memd" / "serve.sock"
    stop_warm(vault)
    first = child_cpu([sys.executable, "-m", "memd", "--vault", str(vault), "search", queries[-1]], env, vault)
    deadline = time.monotonic() + 120
    while not sock.exists():
        if time.monotonic() > deadline:
            raise SystemExit("no warm server started in 120 s")
        time.sleep(0.05)
    pid = int((vault / ".memd" / "daemon.warm.lock").read_text())
    time.sleep(1.0)
    started = process_cpu(pid)
    own: list[float] = []
    served: list[float] = []
    for n in range(repeat):
        before = process_cpu(pid)
        own.append(child_cpu([sys.executable, "-m", "memd", "--vault", str(vault), "search", queries[n]], env, vault))
        served.append(process_cpu(pid) - before)
    os.kill(pid, 15)
    while sock.exists() and time.monotonic() < deadline + 120:
        time.sleep(0.05)
    both = [a + b for a, b in zip(own, served, strict=True)]
    print(f"with the warm server answering, CPU seconds, median of {repeat} searches:")
    print(f"  the first search (starts the server)  {first:.3f} s; the server's start-up {started:.3f} s")
    for label, values in (("the search's process", own), ("the server's part", served), ("both together", both)):
        median = statistics.median(values)
        print(f"  {label:<22} {median:.3f} s  ({median / base:.1f}x python -c pass; max {max(values):.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--vault", help="an indexed vault (or, with --keep, where to build and keep one)")
    parser.add_argument("--keep", action="store_true", help="build the vault at --vault when none is there")
    parser.add_argument("--against", metavar="REV", help="also run the memd package at this git revision")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--top", type=int, default=12, help="modules listed by compile time")
    parser.add_argument("--pattern-runs", type=int, default=5, help="processes counting the patterns compiled")
    parser.add_argument("--words-only", action="store_true", help="search by words alone (MEMD_EMBEDDING=none)")
    parser.add_argument("--warm", action="store_true", help="also measure searches the warm server answers")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "bench"))
    from bench_vectors import queries as make_queries

    with tempfile.TemporaryDirectory(prefix="memd-search-") as folder:
        root = Path(folder)
        if args.vault and (Path(args.vault) / ".memd").exists():
            vault = Path(args.vault).resolve()
        else:
            vault = build(Path(args.vault) if args.vault and args.keep else root / "vault", args.entries)
        codes = {"this checkout": REPO}
        if args.against:
            codes = {args.against: extract(args.against, root / "against"), **codes}
        queries = make_queries(args.repeat + 1)
        base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
        for code in codes.values():
            # Bytecode as an installed package has it: a stale .pyc is compiled again in every process.
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "memd")], check=True)
        base_env["MEMD_WARM_SECONDS"] = "0"  # plain start-up: no warm server answers
        if args.words_only:
            base_env["MEMD_EMBEDDING"] = "none"
        stop_warm(vault)
        cpu: dict[str, list[float]] = {"python -c pass": [], **{name: [] for name in codes}}
        # One search first with each checkout (an index the other wrote is opened, never rewritten).
        for code in codes.values():
            child_cpu(
                [sys.executable, "-m", "memd", "--vault", str(vault), "search", queries[-1]],
                {**base_env, "PYTHONPATH": str(code)},
                vault,
            )
        for n in range(args.repeat):
            cpu["python -c pass"].append(child_cpu([sys.executable, "-c", "pass"], base_env, vault))
            for name, code in codes.items():
                command = [sys.executable, "-m", "memd", "--vault", str(vault), "search", queries[n]]
                cpu[name].append(child_cpu(command, {**base_env, "PYTHONPATH": str(code)}, vault))
        base = statistics.median(cpu["python -c pass"])
        print(f"memd search as a process, CPU seconds (user+sys), median of {args.repeat} rounds:")
        for name, runs in cpu.items():
            median = statistics.median(runs)
            print(f"  {name:<16} {median:.3f} s  ({median / base:.1f}x python -c pass; min {min(runs):.3f})")
        if args.against:
            old, new = (statistics.median(cpu[name]) for name in codes)
            print(f"  ratio {args.against} / this checkout: {old / new:.2f}")
        if args.warm:
            warm(vault, {**base_env, "PYTHONPATH": str(REPO)}, queries, args.repeat, base)
        for name, code in codes.items():
            rows = patterns(code, vault, queries[0], args.pattern_runs, base_env)
            at_import = [r for r in rows if r[1]]
            total_n, total_s = sum(r[2] for r in rows), sum(r[3] for r in rows)
            import_n, import_s = sum(r[2] for r in at_import), sum(r[3] for r in at_import)
            print(
                f"{name}: {total_n} patterns compiled, {total_s:.3f} s; "
                f"at module level {import_n} patterns, {import_s:.3f} s (CPU, median of {args.pattern_runs} runs)"
            )
            for module, top, count, spent in sorted(rows, key=lambda r: -r[3])[: args.top]:
                where = "module level" if top else "when used"
                print(f"    {module:<40} {where:<13} {count:4d} patterns {1000 * spent:7.1f} ms")


if __name__ == "__main__":
    main()
