"""Agentic ``memd ask``: a model searches the vault with the memory tools.

Each round the model sees the question, today's date, the results of its
previous calls (and, in the first round, the first page of the catalog), and
either calls tools (search, grep, grep_doc, list_docs, read_lines) or
finishes with evidence as document line ranges. At most ``MAX_ROUNDS``
rounds, each prompt sized to the model's context. Evidence must be lines the
model saw: each range must meet lines a tool call of this ask returned (it is
cut to them); a reply citing lines no call returned, or copying the prompt's
example, is sent back once with the reason, and a second one gives the
extractive answer with a note. The evidence widens to
whole heading blocks; when it is thin (under ``MIN_EVIDENCE_TOKENS``), the
offline retrieval tops it up, and recent CURRENT entries always come along.

The model then answers from that evidence, and the answer is checked before
anyone sees it (grounded.py): an answer that cites nothing shown, or says
what its cited evidence does not, is replaced by the offline extractive
answer with a notice. An endpoint that fails or is paused gives the offline answer
at once, also with a notice.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from memd.ask import tools
from memd.ask.answer import Answer, Evidence, Report, Step
from memd.ask.grounded import grounded_answer
from memd.ask.offline import EVIDENCE_TOKENS, NOTHING, asked_today, quote
from memd.ask.offline import ask as offline_ask
from memd.ask.shown import Shown, seen, shown_ranges
from memd.core import ledger
from memd.core.errors import MemdError
from memd.core.tokens import count_tokens
from memd.engine.breaker import Unavailable
from memd.engine.client import ContextExceeded, ModelClient, ModelError
from memd.engine.output import BadOutput, Reply, parse_json
from memd.engine.prompts import load
from memd.engine.sizes import prompt_size
from memd.engine.steps import NoValidReply, check_echo, echoes_of, until_valid
from memd.index.records import indexed_records
from memd.vault.vault import Vault

MAX_ROUNDS = 7
MIN_EVIDENCE_TOKENS = 500
RESULT_CHARS = 4000  # per round at most; less when the model's context is small
CATALOG_DOCS = 20  # documents shown in the first round (the model can page with list_docs)
SUMMARY_CHARS = 100
STEP_TOKENS = 256  # max_tokens of a tool round
TOOLS: dict[str, Callable[..., Any]] = {
    "search": tools.search,
    "grep": tools.grep,
    "grep_doc": tools.grep_doc,
    "list_docs": tools.list_docs,
    "read_lines": tools.read_lines,
}
ARGS = {
    "search": {"query", "limit", "since", "until"},
    "grep": {"pattern", "limit", "context"},
    "grep_doc": {"doc", "pattern"},
    "list_docs": {"offset", "limit"},
    "read_lines": {"doc", "start", "end"},
}


class _Unseen(Exception):
    """The model cited lines no tool call returned: its evidence is not used."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _EndpointFailed(Exception):
    """The endpoint failed during the tool rounds: the ask goes offline."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def agent_ask(
    vault: Vault,
    question: str,
    client: ModelClient,
    *,
    model: str | None = None,
    report: Report | None = None,
    budget: int = EVIDENCE_TOKENS,
) -> Answer:
    client.begin("ask")
    ledger.record(client.ledger, {"event": "ask"})
    steps: list[Step] = []
    answer = _agent_ask(vault, question, client, model, report, budget, steps)
    stopped = [f"agent_step: round {s.round} {s.note}; the offline search gave the evidence" for s in steps if s.note]
    return replace(answer, steps=tuple(steps), warnings=(*stopped, *answer.warnings))


def _agent_ask(
    vault: Vault,
    question: str,
    client: ModelClient,
    model: str | None,
    report: Report | None,
    budget: int,
    steps: list[Step],
) -> Answer:
    try:
        client.available()
        ranges = _explore(vault, question, client, model, steps, report or (lambda step: None))
    except (Unavailable, _EndpointFailed) as err:
        reason = err.reason if isinstance(err, _EndpointFailed) else str(err)
        answer = offline_ask(vault, question, budget)
        return replace(answer, fallback=f"{reason}; answered offline", steps=tuple(steps))
    except _Unseen as err:
        answer = offline_ask(vault, question, budget)
        return replace(answer, fallback=f"{err.reason}; showing the extractive answer", steps=tuple(steps))
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
        return replace(baseline, steps=tuple(steps))
    text, cited, problem = grounded_answer(question, gathered, client, model)
    if problem is not None:
        return replace(baseline, evidence=tuple(gathered), steps=tuple(steps), fallback=problem)
    if not text:  # the model read the evidence and found no answer in it
        closest = next((e.record for e in gathered if e.record.kind == "entry"), gathered[0].record)
        said = f"{NOTHING}; closest: {quote(closest)}"
        return Answer(question, False, said, (), tuple(gathered), engine="llm", steps=tuple(steps))
    support = tuple(e for e in gathered if e.record.cite in cited)
    return Answer(question, True, text, support, tuple(gathered), engine="llm", steps=tuple(steps))


def _explore(
    vault: Vault, question: str, client: ModelClient, model: str | None, steps: list[Step], report: Report
) -> list[tuple[str, int, int]]:
    catalog: dict[str, Any] | None = _catalog(vault)
    results: list[dict[str, Any]] = []
    system = load("agent_step", vault.meta_dir)
    context = client.context_tokens(model)
    shown: Shown = {}
    for round_ in range(1, MAX_ROUNDS + 1):
        payload = {
            "question": question,
            "today": asked_today().isoformat(),  # the --as-of date, if any
            "round": round_,
            "max_rounds": MAX_ROUNDS,
            "results": results,
        }
        if catalog is not None:
            payload["catalog"] = catalog
        messages = _fitted(system, payload, context - STEP_TOKENS)
        if messages is None:
            note = "stopped (context window): the prompt does not fit the model's context"
            _record(steps, report, Step(round_, (), True, note))
            return []
        asked = _ask_step(vault, client, model, system, payload, messages, context, results, shown)
        data, note, unseen, context = asked
        if data is None:
            _record(steps, report, Step(round_, (), True, note))
            if unseen:
                raise _Unseen(f"the model cited lines no tool call returned ({unseen})")
            return []
        if data.get("done"):
            _record(steps, report, Step(round_, (), True))
            return list(data["evidence"])
        calls = tuple(data["calls"])
        _record(steps, report, Step(round_, calls, False))
        catalog = None  # shown once; the model can page it with list_docs
        results = [_run(vault, call) for call in calls]
        while len(json.dumps(results, default=str)) > RESULT_CHARS and any(r.get("result") for r in results):
            longest = max(results, key=lambda r: len(json.dumps(r, default=str)))
            longest["result"] = _shrink(longest["result"])
    _record(steps, report, Step(MAX_ROUNDS, (), True, "stopped (round limit): the model did not finish"))
    return []


def _ask_step(
    vault: Vault,
    client: ModelClient,
    model: str | None,
    system: str,
    payload: dict[str, Any],
    messages: list[dict[str, str]],
    context: int,
    results: list[dict[str, Any]],
    shown: Shown,
) -> tuple[dict[str, Any] | None, str, str, int]:
    """One round asked of the model through the loop every model call shares
    (``until_valid``): its valid reply, or None and why it stopped; the lines it
    cited that no tool returned; and the context window as the server last named it."""
    echoes, copied = echoes_of(system, messages[1]["content"])
    unseen = ""
    sent: list[int] = []

    def checked(text: str) -> dict[str, Any]:
        nonlocal unseen
        unseen = ""
        data = _valid_step(text)
        check_echo(data, echoes, payload, copied)
        if data.get("done"):
            data["evidence"], unseen = shown_ranges(vault, data.get("evidence", []), shown)
            if unseen:
                raise BadOutput(f"the evidence cites lines no tool call returned ({unseen})")
        return data

    def complete(asked: list[dict[str, str]], limit: int) -> Reply:
        sent.append(limit)
        try:
            reply = client.complete("agent_step", asked, max_tokens=limit, model=model)
        except ContextExceeded:
            raise
        except ModelError as err:
            raise _EndpointFailed(str(err)) from None
        seen(results, shown)  # as shrunk to fit and read: what the model was shown
        return reply

    tries = 2
    while True:
        try:
            data = until_valid(complete, messages, checked, limit=STEP_TOKENS, context=context, tries=tries)
            return data, "", unseen, context
        except NoValidReply as err:
            return None, f"stopped ({err.cause}): {err}", unseen, context
        except ContextExceeded as err:
            # Refused unread: shrink the results to the window the server named and ask again.
            note = f"stopped (context window): {err}"
            context = client.context_tokens(model)
            refitted = _fitted(system, payload, context - sent[-1])
            tries -= len(sent)
            if refitted is None or refitted == messages or tries <= 0:
                return None, note, unseen, context
            messages, sent = refitted, []
            echoes, copied = echoes_of(system, messages[1]["content"])


def _catalog(vault: Vault) -> dict[str, Any]:
    """The first documents, by id and a clipped summary: enough to aim a search."""
    listing = tools.list_docs(vault, 0, CATALOG_DOCS)
    docs = [{"id": d["id"], "summary": _clipped(str(d.get("summary") or ""))} for d in listing["docs"]]
    return {"total": listing["total"], "docs": docs}


def _clipped(text: str, limit: int = SUMMARY_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _fitted(system: str, payload: dict[str, Any], room: int) -> list[dict[str, str]] | None:
    """The round's messages, results and catalog shrunk until they fit ``room`` tokens."""
    while True:
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": json.dumps(payload, ensure_ascii=False, default=str)},
        ]
        if prompt_size(messages) <= room:
            return messages
        results = [r for r in payload["results"] if r.get("result")]
        catalog = payload.get("catalog")
        if results:
            longest = max(results, key=lambda r: len(json.dumps(r, default=str)))
            longest["result"] = _shrink(longest["result"])
        elif catalog and catalog.get("docs"):
            catalog["docs"] = catalog["docs"][: len(catalog["docs"]) // 2]
            catalog["truncated"] = True
        else:
            return None


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
    args = {k: v for k, v in (call.get("args") or {}).items() if k in ARGS[name]}
    wrong = _wrong_argument(args)
    if wrong is not None:
        return {"tool": name, "args": args, "error": wrong}
    try:
        result = TOOLS[name](vault, **args)
    except (MemdError, TypeError, ValueError) as err:
        return {"tool": name, "args": args, "error": str(err)}
    if name == "search":
        result = {"results": [_brief(r) for r in result]}
    return {"tool": name, "args": args, "result": result}


# What each argument must be, and the largest number one may ask for: a doc of 1 got as
# far as a traceback, and a search limit of 10^9 made the index allocate 32 GB and abort.
_KINDS: dict[str, type] = {
    "query": str,
    "since": str,
    "until": str,
    "pattern": str,
    "doc": str,
    "limit": int,
    "context": int,
    "offset": int,
    "start": int,
    "end": int,
}
_MOST: dict[str, int] = {"limit": 200, "context": 20, "offset": 1_000_000, "start": 10_000_000, "end": 10_000_000}


def _wrong_argument(args: dict[str, Any]) -> str | None:
    for key, value in args.items():
        kind = _KINDS[key]
        if value is None and key in ("end", "since", "until"):
            continue
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            shown = repr(value)[:40]
            return f"{key} must be {'a string' if kind is str else 'a whole number'} (got {shown})"
        if isinstance(value, int) and value > _MOST[key]:
            return f"{key} must be at most {_MOST[key]:,} (got {value:,})"
    return None


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
        # As the index holds it: a secret typed by hand is never sent to the model.
        _, records = indexed_records(vault.root, vault.rel(path))
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
