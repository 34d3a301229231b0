"""The ``memd`` executable: a plain ``memd add`` runs without click.

Hooks and scripts run ``memd add`` once per message, so its start-up is kept
to what an append needs. This reader knows only add's own options (and the
global ``--vault`` and ``--json``, before or after ``add``); the append and
what it prints are the click command's own steps (:func:`read_stdin`,
:func:`pieces`, :func:`report`). Anything else (another command, help, an
unknown option, a value that starts with "-", a ``--meta`` a signature cannot
hold, a terminal on standard input) goes to the click CLI in root.py, which
gives the usual result and messages.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memd.app.results import AddResult

# What `memd add` reads from standard input at most (the size `memd ingest` takes by default).
STDIN_CHARS = 20 * 1024 * 1024
# Signature keys that have their own option; `seq` is memd's to assign.
RESERVED_KEYS = frozenset({"seq", "time", "source", "src"})

_VALUED = {"--vault": "vault", "--time": "when", "--source": "source", "--src": "src", "--meta": "meta"}
_FLAGS = {"--one": "one", "--json": "as_json"}
_GLOBAL = frozenset({"--vault", "--json"})


@dataclass(frozen=True)
class AddRequest:
    """A ``memd add`` command line, read."""

    text: str | None  # None or "-": standard input
    vault: str | None = None
    one: bool = False
    when: str | None = None
    source: str = "user"
    src: str | None = None
    meta: tuple[tuple[str, str], ...] = ()
    as_json: bool = False


def parse_add(args: Sequence[str]) -> AddRequest | None:
    """``args`` (the command line after ``memd``) as a plain add, else None."""
    values: dict[str, str | bool | None] = {}
    meta: list[str] = []
    texts: list[str] = []
    command_seen = False
    rest = iter(args)
    for arg in rest:
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if not command_seen and name not in _GLOBAL:
                return None
            if name in _FLAGS and not eq:
                values[_FLAGS[name]] = True
                continue
            if name not in _VALUED:
                return None
            if not eq:
                value = next(rest, "-")  # a missing value reads as one starting with "-"
            if value.startswith("-"):
                return None
            if name == "--meta":
                meta.append(value)
            else:
                values[_VALUED[name]] = value
        elif arg.startswith("-") and arg != "-":
            return None
        elif not command_seen:
            if arg != "add":
                return None
            command_seen = True
        else:
            texts.append(arg)
    if not command_seen or len(texts) > 1:
        return None
    pairs = [meta_pair(item) for item in meta]
    checked = tuple(pair for pair in pairs if pair is not None)
    if len(checked) < len(pairs):
        return None
    text = texts[0] if texts else None
    if text in (None, "-") and (sys.stdin is None or sys.stdin.isatty()):
        return None
    return AddRequest(
        text=text,
        vault=_text(values.get("vault")),
        one=values.get("one") is True,
        when=_text(values.get("when")),
        source=_text(values.get("source")) or "user",
        src=_text(values.get("src")),
        meta=checked,
        as_json=values.get("as_json") is True,
    )


def _text(value: str | bool | None) -> str | None:
    return value if isinstance(value, str) else None


def meta_pair(item: str) -> tuple[str, str] | None:
    """``KEY=VALUE`` as a pair a signature can hold, else None."""
    from memd.core.errors import FormatError
    from memd.core.signature import check_meta

    key, eq, value = item.partition("=")
    if not eq or not key or key in RESERVED_KEYS:
        return None
    try:
        check_meta(key, value)
    except FormatError:
        return None
    return key, value


def read_stdin() -> str:
    """Standard input, bounded like ``memd ingest --max-size``: ``cat /dev/zero | memd add`` must not fill memory."""
    text = sys.stdin.read(STDIN_CHARS + 1)
    if len(text) > STDIN_CHARS:
        from memd.core.errors import FormatError

        raise FormatError(f"standard input is longer than {STDIN_CHARS:,} characters; use `memd ingest` for a file")
    return text


def pieces(text: str, one: bool) -> list[str]:
    """The entries a text makes: one per line, or with ``--one`` one in all."""
    return [text] if one else text.splitlines()


def report(added: AddResult, as_json: bool) -> Iterator[tuple[str, bool]]:
    """What ``memd add`` prints, as (line, to stderr) pairs."""
    if as_json:
        yield json.dumps(added.to_json()["added"], indent=2, ensure_ascii=False, default=str), False
        return
    for item in added.added:
        yield f"CURRENT.md:{item.line}: {item.signature} {clip(item.text)}", False
    for warning in dict.fromkeys(item.warning for item in added.added if item.warning):
        yield f"warning: {warning}", True


def clip(text: str, width: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def run_add(request: AddRequest) -> int:
    """Append as ``memd add`` does; the exit code."""
    from memd.core.errors import MemdError

    try:
        text = read_stdin() if request.text is None or request.text == "-" else request.text
        from memd.app import Memory

        memory = Memory.open(request.vault, warn=lambda note: print(f"memd: {note}", file=sys.stderr))
        added = memory.add(
            pieces(text, request.one), time=request.when, source=request.source, src=request.src, meta=request.meta
        )
    except MemdError as err:
        message = err.for_door("cli")
        if request.as_json:
            print(
                json.dumps({"error": message, "kind": type(err).__name__, "code": 1}, ensure_ascii=False),
                file=sys.stderr,
            )
        else:
            print(f"Error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nAborted!", file=sys.stderr)
        return 1
    try:
        for line, to_err in report(added, request.as_json):
            print(line, file=sys.stderr if to_err else sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stderr.close()  # output piped into `head`: not an error
    return 0


def main() -> None:
    """The ``memd`` command."""
    request = parse_add(sys.argv[1:])
    if request is not None:
        sys.exit(run_add(request))
    from memd.cli.root import main as cli

    cli()
