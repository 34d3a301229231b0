"""The token ledger: one JSON line per model call, kept outside git.

Each call line: time, operation, model, prompt and completion tokens,
latency, the run it belonged to (``consolidation 7``, ``ingest``, ``ask``),
whether it succeeded, and ``estimated`` when the server reported no usage and
memd counted the tokens itself. Failed calls are recorded too: the prompt was
sent (estimated: a server that timed out may have computed more); a request
the server refused before processing it books 0 tokens. Reports keep the
tokens the server counted apart from memd's estimates. Event lines mark each ``ask`` and each ``consolidation`` with the
tokens of the entries it took in, so construction cost (extraction at ingest
plus consolidation) can be reported per 1,000 ingested tokens.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memd.core.atomic import read_bytes
from memd.core.timeutil import format_time, now

EXTRACTION = {"extract"}
CONSOLIDATION = {"rewrite", "plan", "update_topic", "split", "merge_groups", "summarise", "title"}
CONSTRUCTION = EXTRACTION | CONSOLIDATION
QUERY = {"agent_step", "answer"}


@dataclass(frozen=True)
class Call:
    operation: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency: float
    run: str
    ok: bool = True
    estimated: bool = False  # the server reported no usage: memd's counter
    max_tokens: int | None = None
    finish: str | None = None  # the server's finish_reason ("stop", "length")
    error: str | None = None


def record(path: Path, call: Call | dict[str, Any]) -> None:
    """Append one line. O_APPEND keeps concurrent writers' lines whole."""
    line = asdict(call) if isinstance(call, Call) else dict(call)
    line = {"time": format_time(now()), **line}
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # Never through a link (out of the vault) nor into a pipe (the open would wait for a reader).
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            return  # the ledger is accounting, not memory: a wrong kind of file in its place costs a line
        raise
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.write(fd, (json.dumps(line, ensure_ascii=False) + "\n").encode())
    finally:
        os.close(fd)


def note_intake(path: Path, event: dict[str, Any]) -> None:
    """Record what a run took in, where model costs are being accounted (the
    ledger exists): an offline vault keeps no ledger at all."""
    if path.exists():
        record(path, event)


def read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = []
    for raw in read_bytes(path).decode("utf-8", errors="replace").splitlines():
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            continue  # a torn last line after a crash
        if isinstance(value, dict):
            lines.append(value)
    return lines


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _tokens(call: dict[str, Any]) -> int:
    return _int(call.get("prompt_tokens")) + _int(call.get("completion_tokens"))


def _totals(calls: list[dict[str, Any]]) -> dict[str, int]:
    prompt = sum(_int(c.get("prompt_tokens")) for c in calls)
    completion = sum(_int(c.get("completion_tokens")) for c in calls)
    estimated = sum(_tokens(c) for c in calls if c.get("estimated"))
    return {
        "calls": len(calls),
        "failed": sum(1 for c in calls if c.get("ok") is False),
        "estimated": sum(1 for c in calls if c.get("estimated")),
        "prompt": prompt,
        "completion": completion,
        "tokens": prompt + completion,
        "server_counted_tokens": prompt + completion - estimated,
        "estimated_tokens": estimated,
    }


def _by_operation(calls: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for call in calls:
        groups[str(call.get("operation"))].append(call)
    return {name: _totals(group) for name, group in sorted(groups.items())}


def summary(path: Path) -> dict[str, Any]:
    """Construction (extraction + consolidation) and query cost, per operation,
    per consolidation, per 1,000 ingested tokens and per ask."""
    lines = read(path)
    calls = [line for line in lines if "operation" in line]
    built = [c for c in calls if c.get("operation") in CONSTRUCTION]
    asked = [c for c in calls if c.get("operation") in QUERY]
    events = [line for line in lines if "event" in line]
    # Only consolidations that called the model: an offline one costs nothing
    # and would water the ratios down.
    modelled = {str(c.get("run")) for c in built}
    consolidated = [
        e for e in events if e.get("event") == "consolidation" and f"consolidation {e.get('consolidation')}" in modelled
    ]
    consolidations = len(consolidated)
    ingested = sum(_int(e.get("buffer_tokens")) for e in consolidated)
    construction = _totals(built)
    query = _totals(asked)
    consolidation_tokens = sum(t["tokens"] for op, t in _by_operation(built).items() if op in CONSOLIDATION)
    asks = sum(1 for e in events if e.get("event") == "ask") or len({c.get("run") for c in asked})
    runs: dict[str, dict[str, int]] = {}
    for call in built:
        run = runs.setdefault(str(call.get("run", "")), {"prompt": 0, "completion": 0, "calls": 0})
        run["prompt"] += _int(call.get("prompt_tokens"))
        run["completion"] += _int(call.get("completion_tokens"))
        run["calls"] += 1
    everything = _totals(calls)
    return {
        "calls": len(calls),
        "failed_calls": sum(1 for c in calls if c.get("ok") is False),
        "estimated_calls": sum(1 for c in calls if c.get("estimated")),
        "tokens": everything["tokens"],
        "server_counted_tokens": everything["server_counted_tokens"],
        "estimated_tokens": everything["estimated_tokens"],
        "construction": {
            **construction,
            "consolidations": consolidations,
            "extraction_tokens": construction["tokens"] - consolidation_tokens,
            "consolidation_tokens": consolidation_tokens,
            "per_consolidation": round(consolidation_tokens / consolidations) if consolidations else 0,
            "ingested_tokens": ingested,
            "per_1000_ingested": round(construction["tokens"] * 1000 / ingested) if ingested else None,
            "by_operation": _by_operation(built),
            "runs": runs,
        },
        "query": {
            **query,
            "asks": asks,
            "per_ask": round(query["tokens"] / asks) if asks else 0,
            "by_operation": _by_operation(asked),
        },
    }
