"""The token ledger: one JSON line per model call, kept outside git.

Each line: time, operation, model, prompt and completion tokens, latency,
and the run it belonged to (``consolidation 7``, ``ask``). Consolidations
also log how many buffer tokens they took in, so construction cost can be
reported per 1,000 ingested tokens.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .timeutil import format_time, now

CONSTRUCTION = {"extract", "rewrite", "plan", "update_topic", "split", "merge_groups", "summarise", "title"}
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


def record(path: Path, call: Call | dict[str, Any]) -> None:
    """Append one line. O_APPEND keeps concurrent writers' lines whole."""
    line = asdict(call) if isinstance(call, Call) else dict(call)
    line = {"time": format_time(now()), **line}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (json.dumps(line, ensure_ascii=False) + "\n").encode())
    finally:
        os.close(fd)


def read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            lines.append(json.loads(raw))
        except ValueError:
            continue  # a torn last line after a crash
    return lines


def summary(path: Path) -> dict[str, Any]:
    """Construction tokens per consolidation and per 1,000 ingested tokens;
    query tokens per ask."""
    lines = read(path)
    calls = [line for line in lines if "operation" in line]
    runs: dict[str, dict[str, int]] = defaultdict(lambda: {"prompt": 0, "completion": 0, "calls": 0})
    for call in calls:
        run = runs[call.get("run", "")]
        run["prompt"] += int(call.get("prompt_tokens", 0))
        run["completion"] += int(call.get("completion_tokens", 0))
        run["calls"] += 1
    consolidations = {
        f"consolidation {line['consolidation']}": int(line.get("buffer_tokens", 0))
        for line in lines
        if line.get("event") == "consolidation"
    }
    construction = {name: dict(totals) for name, totals in runs.items() if name.startswith("consolidation")}
    asks = [dict(totals) for name, totals in runs.items() if name.startswith("ask")]
    built = sum(t["prompt"] + t["completion"] for t in construction.values())
    ingested = sum(consolidations.get(name, 0) for name in construction)
    ask_tokens = [t["prompt"] + t["completion"] for t in asks]
    return {
        "calls": len(calls),
        "failed_calls": sum(1 for c in calls if not c.get("ok", True)),
        "construction": {
            "consolidations": len(construction),
            "tokens": built,
            "per_consolidation": round(built / len(construction)) if construction else 0,
            "ingested_tokens": ingested,
            "per_1000_ingested": round(built * 1000 / ingested) if ingested else None,
            "runs": construction,
        },
        "query": {
            "asks": len(asks),
            "tokens": sum(ask_tokens),
            "per_ask": round(sum(ask_tokens) / len(asks)) if asks else 0,
        },
    }
