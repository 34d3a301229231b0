"""Agentic ``memd ask``: a model searches the vault with the memory tools.

Each round the model sees the question, today's date, the first page of the
catalog and the results of its previous calls, and either calls tools
(search, grep, grep_doc, list_docs, read_lines) or finishes with evidence as
document line ranges. At most ``MAX_ROUNDS`` rounds. The evidence widens to
whole heading blocks; when it is thin (under ``MIN_EVIDENCE_TOKENS``), the
offline retrieval tops it up, and recent CURRENT entries always come along.
The model then answers from that evidence with ``path:line`` citations; a
citation that is not in the evidence is dropped, and an unusable answer falls
back to the offline extractive one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import tools
from .ask import EVIDENCE_TOKENS, Answer, Evidence
from .ask import ask as offline_ask
from .engine.client import BadOutput, ModelClient, ModelError, parse_json
from .errors import MemdError
from .index.records import read_records
from .prompts import load
from .timeutil import now
from .tokens import count_tokens
from .vault import Vault

MAX_ROUNDS = 7
MIN_EVIDENCE_TOKENS = 500
RESULT_CHARS = 6000  # per round, so the conversation stays within a small model's context
TOOLS: dict[str, Callable[..., Any]] = {
    "search": tools.search,
    "grep": tools.grep,
    "grep_doc": tools.grep_doc,
    "list_docs": tools.list_docs,
    "read_lines": tools.read_lines,
}
ARGS = {
    "search": {"query", "limit"},
    "grep": {"pattern", "limit", "context"},
    "grep_doc": {"doc", "pattern"},
    "list_docs": {"offset", "limit"},
    "read_lines": {"doc", "start", "end"},
}


@dataclass(frozen=True)
class Step:
    round: int
    calls: tuple[dict[str, Any], ...]
    done: bool
    note: str = ""


Report = Callable[[Step], None]


def agent_ask(
    vault: Vault,
    question: str,
    client: ModelClient,
    *,
    model: str | None = None,
    report: Report | None = None,
    budget: int = EVIDENCE_TOKENS,
) -> tuple[Answer, list[Step]]:
    client.run = "ask"
    steps: list[Step] = []
    ranges = _explore(vault, question, client, model, steps, report or (lambda step: None))
    gathered = _evidence(vault, ranges, budget)
    baseline = offline_ask(vault, question, budget)
    spent = sum(count_tokens(e.record.text) for e in gathered)
    seen = {e.record.cite for e in gathered}
    for item in baseline.evidence:
        # BM25 tops up thin evidence; recent CURRENT entries always come along.
        thin = spent < MIN_EVIDENCE_TOKENS
        if item.record.cite in seen or not (thin or item.via == "recent"):
            continue
        cost = count_tokens(item.record.text)
        if spent + cost > budget:
            continue
        gathered.append(item)
        seen.add(item.record.cite)
        spent += cost
    if not gathered:
        return baseline, steps
    text, cited = _answer(question, gathered, client, model, baseline)
    support = tuple(e for e in gathered if e.record.cite in cited) or baseline.support
    return Answer(question, True, text, support, tuple(gathered), engine="llm"), steps


def _explore(
    vault: Vault, question: str, client: ModelClient, model: str | None, steps: list[Step], report: Report
) -> list[tuple[str, int, int]]:
    catalog = tools.list_docs(vault, 0, 50)
    results: list[dict[str, Any]] = []
    system = load("agent_step", vault.meta_dir)
    for round_ in range(1, MAX_ROUNDS + 1):
        payload = {
            "question": question,
            "today": now().date().isoformat(),
            "catalog": catalog,
            "round": round_,
            "max_rounds": MAX_ROUNDS,
            "results": results,
        }
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": json.dumps(payload, ensure_ascii=False, default=str)},
        ]
        try:
            data = _valid_step(client.complete("agent_step", messages, model))
        except (BadOutput, ModelError) as first:
            try:
                messages += [{"role": "user", "content": f"That reply was not valid: {first}. Reply with only JSON."}]
                data = _valid_step(client.complete("agent_step", messages, model))
            except (BadOutput, ModelError) as err:
                _record(steps, report, Step(round_, (), True, f"stopped: {err}"))
                return []
        if data.get("done"):
            _record(steps, report, Step(round_, (), True))
            return [(str(e["doc"]), int(e["start"]), int(e["end"])) for e in data.get("evidence", [])]
        calls = tuple(data["calls"])
        _record(steps, report, Step(round_, calls, False))
        results = [_run(vault, call) for call in calls]
        while len(json.dumps(results, default=str)) > RESULT_CHARS and any(r.get("result") for r in results):
            longest = max(results, key=lambda r: len(json.dumps(r, default=str)))
            longest["result"] = _shrink(longest["result"])
    _record(steps, report, Step(MAX_ROUNDS, (), True, "round limit reached"))
    return []


def _record(steps: list[Step], report: Report, step: Step) -> None:
    steps.append(step)
    report(step)


def _valid_step(reply: str) -> dict[str, Any]:
    data = parse_json(reply)
    if data.get("done"):
        evidence = data.get("evidence", [])
        if not isinstance(evidence, list) or not all(
            isinstance(e, dict)
            and {"doc", "start", "end"} <= set(e)
            and isinstance(e["start"], int)
            and isinstance(e["end"], int)
            for e in evidence
        ):
            raise BadOutput("evidence must be a list of {doc, start, end} with line numbers")
        return data
    calls = data.get("calls")
    if not isinstance(calls, list) or not calls:
        raise BadOutput('reply with {"calls": [...]} or {"done": true, "evidence": [...]}')
    for call in calls[:5]:
        if not isinstance(call, dict) or call.get("tool") not in TOOLS or not isinstance(call.get("args", {}), dict):
            raise BadOutput(f"unknown tool call {call!r}; tools: {', '.join(TOOLS)}")
    data["calls"] = calls[:5]
    return data


def _run(vault: Vault, call: dict[str, Any]) -> dict[str, Any]:
    """Run one tool call; a bad argument is the model's problem, reported back to it."""
    name = call["tool"]
    args = {k: v for k, v in call.get("args", {}).items() if k in ARGS[name]}
    try:
        result = TOOLS[name](vault, **args)
    except (MemdError, TypeError, ValueError) as err:
        return {"tool": name, "args": args, "error": str(err)}
    if name == "search":
        result = {"results": [_brief(r) for r in result]}
    return {"tool": name, "args": args, "result": result}


def _brief(hit: dict[str, Any]) -> dict[str, Any]:
    return {k: hit.get(k) for k in ("path", "line", "end_line", "seq", "time", "text")}


def _shrink(result: Any) -> Any:
    """Halve the biggest list in a tool result (keeps the best-ranked half)."""
    if isinstance(result, dict):
        key = max((k for k, v in result.items() if isinstance(v, list)), key=lambda k: len(result[k]), default=None)
        if key is not None and result[key]:
            return {**result, key: result[key][: len(result[key]) // 2], "truncated": True}
    return None


def _evidence(vault: Vault, ranges: list[tuple[str, int, int]], budget: int) -> list[Evidence]:
    """Entries in the cited ranges, widened to their heading block, within budget."""
    chosen: list[Evidence] = []
    spent = 0
    seen: set[str] = set()
    for doc, start, end in ranges[:20]:
        try:
            path = vault.resolve_doc(doc)
        except MemdError:
            continue  # a made-up document is ignored, never read
        _, records = read_records(vault.root, vault.rel(path))
        entries = [r for r in records if r.kind == "entry"]
        hit = [r for r in entries if r.line <= end and r.end_line >= start]
        headings = {r.headings for r in hit}
        block = [r for r in entries if r.headings in headings and r.doc != "CURRENT"] + [
            r for r in hit if r.doc == "CURRENT"
        ]
        for record in sorted(block, key=lambda r: r.line):
            cost = count_tokens(record.text)
            if record.rid in seen or spent + cost > budget:
                continue
            seen.add(record.rid)
            spent += cost
            chosen.append(Evidence(record, 1.0, "agent" if record in hit else "block"))
    return chosen


def _answer(
    question: str, evidence: list[Evidence], client: ModelClient, model: str | None, baseline: Answer
) -> tuple[str, set[str]]:
    refs = {e.record.cite: e.record for e in evidence}
    payload = {
        "question": question,
        "today": now().date().isoformat(),
        "evidence": [{"ref": cite, "seq": r.seq, "time": r.time, "text": r.text} for cite, r in refs.items()],
    }
    messages = [
        {"role": "system", "content": load("answer")},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
    ]
    for _attempt in range(2):
        try:
            data = parse_json(client.complete("answer", messages, model))
            text = data.get("answer")
            if not isinstance(text, str) or not text.strip():
                raise BadOutput("answer must be non-empty text")
        except BadOutput as err:
            messages += [{"role": "user", "content": f"That reply was not valid: {err}. Reply with only JSON."}]
            continue
        except ModelError:
            break
        cited = {str(c) for c in data.get("cited", []) if str(c) in refs}
        return text.strip(), cited
    return baseline.answer, {e.record.cite for e in baseline.support}
