"""The vector index's log, ``vectors/log.json``: which segments there are and,
per indexed file, its content hash, its generation, and how many of its
records have a vector against how many want one (memd/index/vectors.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memd.core.atomic import atomic_write

LOG = "log.json"
LOG_FORMAT = 1


def write_log(path: Path, model: str, ident: str, following: int, segments: list[int], files: dict[str, Any]) -> None:
    """The log, written atomically (its folder made if need be)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"format": LOG_FORMAT, "model": model, "id": ident, "next": following, "segments": segments, "files": files}
    atomic_write(path, json.dumps(data, separators=(",", ":")))


def read_log(path: Path, model: str) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != LOG_FORMAT or data.get("model") != model:
        return None
    files, segments = data.get("files"), data.get("segments")
    if not isinstance(files, dict) or not isinstance(segments, list) or not isinstance(data.get("next"), int):
        return None
    if not all(isinstance(n, int) and 0 < n < data["next"] for n in segments) or not isinstance(data.get("id"), str):
        return None
    for state in files.values():
        if not (isinstance(state, list) and len(state) == 4 and all(isinstance(v, int) for v in state[1:])):
            return None
    return data
