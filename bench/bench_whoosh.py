"""Index benchmark (Whoosh, words only): build, query, update and freshness-check cost.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_whoosh.py            # 10k and 100k entries
    python bench/bench_whoosh.py 5000       # other sizes

Each size gets a synthetic vault in a temporary folder: topic files of 50
entries under 5 headings, words drawn from a Zipf-like distribution over a
5000-word vocabulary (so queries hit common and rare terms alike), sessions
of five entries ~97 minutes apart (100k entries span ~3.7 years), three
sources. Queries go through ``retrieve`` exactly as ``memd search`` runs it,
each on a fresh ``IndexStore`` (as every CLI call and MCP tool call does):
the freshness check, opening the index and the search itself.

Figures are CPU seconds (``time.process_time``), medians over the queries,
so a busy machine disturbs them least. "before" runs the code paths this
version replaced, kept below as ``Legacy*``, on the same index and queries
in the same run: the freshness check that walked the vault and re-parsed the
manifest, filters as a ``Require`` query with skipping off, neighbour lookups
probing each term before reading it.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_index import ENTRIES_PER_TOPIC, QUERIES, sentence, topic_text, vocabulary
from percentiles import percentile

from memd.app.init import init_vault
from memd.index import Filters, IndexStore
from memd.index import manifest as manifests
from memd.index.fields import FIELD_BOOSTS, record_from_data
from memd.index.freshness import unchanged
from memd.index.retrieve import retrieve
from memd.index.store import SyncReport
from memd.index.whoosh_backend import WhooshBackend
from memd.vault.vault import Vault

START = datetime(2023, 1, 1)
SOURCES = ("user", "user", "assistant")


def entry_time(seq: int) -> str:
    """Sessions of five entries, one every ~97 minutes: 100k entries span ~3.7 years of distinct times."""
    moment = START + timedelta(minutes=97 * (seq // 5))
    return moment.strftime("%Y-%m-%dT%H:%M")


def signature(seq: int) -> str:
    return f"seq={seq},time={entry_time(seq)},source={SOURCES[seq % 7 % 3]}"


FILTERS = Filters(since=datetime(2023, 3, 1, tzinfo=UTC), source="user")  # most of the vault: the hard case


class LegacyWhoosh(WhooshBackend):
    """The previous search and by_seq: a Require filter with skipping off; a probe per seq."""

    def search(self, terms: Any, limit: int, filters: Filters) -> Any:
        from whoosh import query as wq

        from memd.index.base import Hit

        clauses = [wq.Term(f, t, boost=b * fb) for t, b in terms for f, fb in FIELD_BOOSTS.items()]
        query: Any = wq.Or(clauses)
        restriction = _legacy_filter(filters)
        if restriction is not None:
            query = wq.Require(query, restriction)
        results = self._search_handle().search(query, limit=limit, optimize=restriction is None)
        return [Hit(record_from_data(hit["data"]), float(hit.score or 0.0)) for hit in results]

    def by_seq(self, seqs: Any) -> list[Any]:
        searcher = self._search_handle()
        reader = searcher.reader()
        docnums: set[int] = set()
        for seq in set(seqs):
            if ("seqs", str(seq)) in reader:
                docnums.update(reader.postings("seqs", str(seq)).all_ids())
        records = (record_from_data(searcher.stored_fields(d)["data"]) for d in sorted(docnums))
        return [record for record in records if record.kind == "entry"]


def _legacy_filter(filters: Filters) -> Any:
    from whoosh import query as wq

    parts: list[Any] = []
    if filters.since or filters.until:
        start = filters.since.replace(tzinfo=None) if filters.since else None
        end = filters.until.replace(tzinfo=None) if filters.until else None
        named = [wq.DateRange("when_start", None, end)] if end else []
        named += [wq.DateRange("when_end", start, None)] if start else []
        parts.append(wq.Or([wq.DateRange("time", start, end), wq.And(named) if len(named) > 1 else named[0]]))
    for field in ("source", "kind", "doc"):
        if getattr(filters, field):
            parts.append(wq.Term(field, getattr(filters, field)))
    return None if not parts else parts[0] if len(parts) == 1 else wq.And(parts)


def legacy_indexed_files(vault: Vault) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for path in vault.documents():
        stat = path.stat()
        found[vault.rel_of(path)] = (stat.st_mtime_ns, stat.st_size)
    return found


class LegacyStore(IndexStore):
    """The previous freshness check: walk and stat the whole vault, parse the manifest anew."""

    def _open_backend(self, create: bool = False) -> Any:
        return LegacyWhoosh(self.engine_dir, create=create)

    def sync(self, progress: Any = None) -> SyncReport:
        files = legacy_indexed_files(self.vault)
        manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        if self._backend is None:
            self._backend = self._open_backend()
            assert self._count_matches(manifest)
        assert not manifests.stale(manifest, files), "the benchmark expects a fresh index"
        return SyncReport(False, (), (), manifest["records"], 0.0)


def fresh_check(vault: Vault) -> None:
    """Today's check as a new process meets it: the manifest parsed once, then the stats."""
    manifests.forget()
    manifest = IndexStore(vault)._load_manifest()
    assert manifest is not None and unchanged(vault.root, manifest, vault.ignore)


def legacy_fresh_check(vault: Vault) -> None:
    files = legacy_indexed_files(vault)
    manifest = json.loads((vault.index_dir / "manifest.json").read_text(encoding="utf-8"))
    assert not manifests.stale(manifest, files)


def cpu_ms(action: Any) -> float:
    started = time.process_time()
    action()
    return 1000 * (time.process_time() - started)


def p50_p95(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), percentile(values, 0.95)


def one_query(store_class: type[IndexStore], vault: Vault, query: str, filters: Filters | None) -> None:
    store = store_class(vault)
    try:
        store.sync()
        retrieve(store.backend(), query, 10, filters)
    finally:
        store.close()


def settle(vault: Vault) -> None:
    """Age the files past the racy window (a vault at rest), then let one sync record the stamps."""
    then = time.time() - 3600
    for path in [vault.root, *vault.root.glob("*"), *vault.topics_dir.glob("*")]:
        if not path.name.startswith("."):
            os.utime(path, (then, then))
    IndexStore(vault).sync()


def run(entries: int) -> dict[str, Any]:
    rng = random.Random(entries)
    words = vocabulary(rng)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    out: dict[str, Any] = {"entries": entries}
    with tempfile.TemporaryDirectory(prefix="memd-bench-") as folder:
        vault = init_vault(Path(folder) / "vault").vault
        config = vault.root / ".memd" / "config.toml"
        config.write_text(config.read_text().replace('embedding = "minilm-l6"', 'embedding = "none"'))
        topics = entries // ENTRIES_PER_TOPIC
        for n in range(topics):
            text = topic_text(n, 1 + n * ENTRIES_PER_TOPIC, rng, words, weights, signature)
            (vault.topics_dir / f"topic-{n}.md").write_text(text, encoding="utf-8")
        out["files"] = topics

        started = time.process_time()
        report = IndexStore(vault).rebuild()
        out["build_s"] = time.process_time() - started
        out["records"] = report.records
        settle(vault)

        queries = [" ".join(rng.choices(words[:2000], k=rng.randint(1, 4))) for _ in range(QUERIES)]
        for name, filters in (("plain", None), ("filtered", FILTERS)):
            before: list[float] = []
            after: list[float] = []
            for query in queries:  # alternated, so both meet the same machine load
                before.append(cpu_ms(lambda q=query, f=filters: one_query(LegacyStore, vault, q, f)))
                after.append(cpu_ms(lambda q=query, f=filters: one_query(IndexStore, vault, q, f)))
            out[name] = (p50_p95(before), p50_p95(after))
        out["fresh"] = (
            p50_p95([cpu_ms(lambda: legacy_fresh_check(vault)) for _ in range(30)]),
            p50_p95([cpu_ms(lambda: fresh_check(vault)) for _ in range(30)]),
        )

        store = IndexStore(vault)
        store.sync()
        updates = []
        for n in rng.sample(range(topics), 5):
            path = vault.topics_dir / f"topic-{n}.md"
            with path.open("a", encoding="utf-8") as handle:
                handle.write(f"- <seq={10**7 + n},source=user> {sentence(rng, words, weights)}\n")
            updates.append(cpu_ms(store.sync))
        store.close()
        out["update_ms"] = statistics.median(updates)
    return out


def main(argv: list[str]) -> None:
    sizes = [int(arg) for arg in argv] or [10_000, 100_000]
    # The Whoosh index is what is measured, whichever backend the machine would pick (tantivy when installed).
    os.environ["MEMD_INDEX_BACKEND"] = "whoosh"
    print("CPU ms, p50/p95 (before -> after, same index and queries, alternated in one run)")
    for size in sizes:
        r = run(size)
        print(f"{r['entries']} entries, {r['records']} records, {r['files']} files: build {r['build_s']:.1f} s CPU")
        for name in ("plain", "filtered", "fresh"):
            (b50, b95), (a50, a95) = r[name]
            label = {"plain": "query", "filtered": "query --since --source", "fresh": "freshness check"}[name]
            print(f"  {label:<24} {b50:7.1f} / {b95:7.1f}  ->  {a50:7.1f} / {a95:7.1f}   ({b50 / a50:.1f}x at p50)")
        print(f"  {'one-file update':<24} {r['update_ms']:7.1f} (median of 5 appends)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
