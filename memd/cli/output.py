"""What ``memd add`` and ``memd search`` print, as (line, to stderr) pairs.

Shared by the click commands and by launch.py, which runs a plain add, and a
search a running daemon answers, without click: both print the same lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memd.app.results import AddResult

Line = tuple[str, bool]


def as_json(data: Any) -> str:
    """``--json`` output: indented, Unicode as is."""
    import json

    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def error_json(message: str, kind: str, code: int) -> str:
    """An error in ``--json`` mode: a JSON object on stderr, so a script reads one format."""
    import json

    return json.dumps({"error": message, "kind": kind, "code": code}, ensure_ascii=False)


def added_lines(added: AddResult, json_out: bool) -> Iterator[Line]:
    """What ``memd add`` prints for the entries it appended."""
    if json_out:
        yield as_json(added.to_json()["added"]), False
        return
    for item in added.added:
        yield f"CURRENT.md:{item.line}: {item.signature} {clip(item.text)}", False
    for warning in dict.fromkeys(item.warning for item in added.added if item.warning):
        yield f"warning: {warning}", True


def served_lines(served: dict[str, Any], json_out: bool) -> Iterator[Line]:
    """What ``memd search`` prints for the hits a daemon answered with (``serve.request``'s reply)."""
    note, finish, respelled = served.get("note"), served.get("finish_seconds"), served.get("respelled") or []
    return hit_lines(served["results"], note, finish, True, json_out, respelled)


def hit_lines(
    hits: list[dict[str, Any]],
    note: str | None,
    finish: float | None,
    daemon: bool,
    json_out: bool,
    respelled: Sequence[Sequence[str]] = (),
    elsewhere: bool = False,
) -> Iterator[Line]:
    """What ``memd search`` prints for its hits; ``note``: vectors still being built
    (``elsewhere``: by another memd process, a reindex); ``respelled``: query words no
    record holds, each (as typed, as read)."""
    if respelled:
        yield "note: read " + ", ".join(f"{typed!r} as {read!r}" for typed, read in respelled), True
    if note:
        yield f"note: {note}; {finish_hint(daemon, finish, elsewhere)}", True
    if json_out:
        yield as_json(hits), False
        return
    if not hits:
        yield "no matches", True
        return
    for hit in hits:
        # Why a hit with none of the query's words is there.
        beside = {"neighbour": "  (next to a hit)", "meaning": "  (via meaning)"}.get(hit["via"], "")
        yield f"{hit['cite']}  {signature(hit)}{beside}", False
        yield f"    {hit['snippet']}", False


def signature(hit: dict[str, Any]) -> str:
    """A hit's signature as its file shows it (a heading block's: its headings)."""
    if not hit.get("seq") or hit.get("kind") == "partition":
        return "[" + " > ".join(hit.get("headings") or [hit["doc"]]) + "]"
    # Written, not parsed: the hit's fields came from a signature memd read, and a process
    # printing what the daemon found need not import the Signature value type.
    from memd.core.signature_text import written

    fields = [("seq", str(hit["seq"]))]
    fields += [(key, hit[key]) for key in ("time", "source", "src") if hit.get(key) is not None]
    fields += [(key, str(value)) for key, value in (hit.get("meta") or {}).items()]
    return written(fields)


# Past this much of the numpy encoder's work, the optional compiled encoder is worth
# naming: it costs about half the CPU a text where measured (README, "Faster index builds").
FAST_TIP_SECONDS = 120.0
FAST_TIP_TEXTS = 20_000
FAST_TIP = "`pip install 'memd[fast]'` builds vectors faster"


def fast_installed() -> bool:
    """Whether the ``memd[fast]`` encoder's package is installed (looked up, not imported)."""
    import importlib.util

    return importlib.util.find_spec("openvino") is not None


def finish_hint(daemon: bool, seconds: float | None, elsewhere: bool = False) -> str:
    if daemon:
        return "the daemon is building the rest"
    if elsewhere:
        return "another memd process (a reindex) is building the rest"
    if seconds is None:
        return "run `memd reindex` to build the rest"
    minutes = max(1, round(seconds / 60))
    tip = f"; {FAST_TIP}" if seconds >= FAST_TIP_SECONDS and not fast_installed() else ""
    return f"run `memd reindex` to build the rest (about {minutes} min{tip})"


def reindex_tip(embedded: int) -> str | None:
    """A line after a ``memd reindex`` that embedded ``embedded`` texts with numpy alone, when
    that was long enough for the faster encoder to matter."""
    if embedded < FAST_TIP_TEXTS or fast_installed():
        return None
    return f"tip: {FAST_TIP} (embedded {embedded:,} texts)"


def clip(text: str, width: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
