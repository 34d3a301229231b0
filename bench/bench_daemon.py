"""Daemon latency and ingest throughput.

Usage: python bench/bench_daemon.py [--edits 50] [--locomo ../shared/data/locomo-dev.json]

1. edit -> searchable: a real `memd daemon run` (default settings) watches a
   temp vault holding LoCoMo conversation 1 (ingested and consolidated, so the
   index is not trivially small); a topic is rewritten with a fresh word N
   times, and each edit's latency is the time from the write until the index
   holds the new content (its manifest records the file's new hash), which is
   when `memd search` can answer from it without re-indexing. p50 / p95.
2. ingest throughput: `ingest_file` on the LoCoMo slice (all conversations in
   one file) into a fresh vault, in turns per second; and conversation 1
   dropped into the running daemon's inbox, from the drop until the file
   reaches inbox/done/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from percentiles import percentile

from memd.app.init import init_vault
from memd.consolidation.run import consolidate
from memd.ingest import ingest_file
from memd.vault.vault import Vault

DEFAULT_LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"


def wait_for(condition: Callable[[], bool], seconds: float) -> float:
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > seconds:
            raise TimeoutError(f"gave up after {seconds}s")
        time.sleep(0.001)
    return time.perf_counter() - started


def indexed_hash(vault: Vault, rel: str) -> str | None:
    try:
        entry = json.loads((vault.index_dir / "manifest.json").read_text())["files"].get(rel)
    except (OSError, ValueError, KeyError):
        return None
    return entry[2] if entry else None


def bench_edits(vault: Vault, edits: int) -> list[float]:
    rel = "topics/bench-notes.md"
    path = vault.root / rel
    latencies = []
    for n in range(edits):
        text = f'---\nid: bench-notes\nsummary: "bench"\n---\n# Notes\n- Remember the word zq{n:04d}x today\n'
        started = time.perf_counter()
        path.write_text(text)
        digest = hashlib.sha1(text.encode()).hexdigest()
        wait_for(lambda digest=digest: indexed_hash(vault, rel) == digest, 10)
        latencies.append(time.perf_counter() - started)
        time.sleep(0.05)  # a person does not save 50 times a second
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    args = parser.parse_args()
    conversations = json.loads(args.locomo.read_text())

    with tempfile.TemporaryDirectory(prefix="memd-bench-") as folder:
        root = Path(folder)
        # Ingest throughput, in process.
        (root / "all.json").write_text(json.dumps(conversations))
        bulk = init_vault(root / "bulk").vault
        started = time.perf_counter()
        result = ingest_file(bulk, root / "all.json")
        seconds = time.perf_counter() - started
        print(
            f"ingest (in process): {result.turns} turns, {result.entries} entries in {seconds:.2f}s "
            f"= {result.turns / seconds:.0f} turns/s"
        )

        # A realistic vault for the daemon: conversation 1, consolidated.
        vault = init_vault(root / "vault").vault
        (root / "conv1.json").write_text(json.dumps(conversations[:1]))
        ingest_file(vault, root / "conv1.json")
        consolidate(vault)
        log = (root / "daemon.log").open("wb")
        env = {**os.environ, "MEMD_LOCK_TIMEOUT": "30s"}
        daemon = subprocess.Popen(
            [sys.executable, "-m", "memd", "--vault", str(vault.root), "daemon", "run"],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
        )
        try:
            status = vault.meta_dir / "daemon.json"
            wait_for(lambda: status.exists() and json.loads(status.read_text()).get("ready") is True, 30)
            latencies = bench_edits(vault, args.edits)
            print(
                f"edit -> searchable over {len(latencies)} edits: p50 {statistics.median(latencies) * 1000:.0f} ms, "
                f"p95 {percentile(latencies, 0.95) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms "
                "(includes the 0.5 s debounce)"
            )

            second = conversations[1] if len(conversations) > 1 else conversations[0]
            drop = vault.inbox_dir / "conv2.json"
            turns = sum(
                len(v) for k, v in second["conversation"].items() if k.startswith("session_") and isinstance(v, list)
            )
            staged = root / "conv2.json"
            staged.write_text(json.dumps([second]))
            started = time.perf_counter()
            os.replace(staged, drop)
            seconds = wait_for(lambda: (vault.inbox_dir / "done" / "conv2.json").exists(), 120)
            print(
                f"ingest (daemon inbox): {turns} turns in {seconds:.2f}s = {turns / seconds:.0f} turns/s "
                "(drop -> inbox/done, includes debounce and the stability check)"
            )
        finally:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=60)
            except subprocess.TimeoutExpired:
                daemon.kill()
            log.close()


if __name__ == "__main__":
    main()
