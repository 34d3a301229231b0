"""The read side: search, grep, read, list, ask, reindex."""

from __future__ import annotations

import re
from typing import Any

import click

from memd.cli import emit_json, get_memory, json_option, progress_bar, vault_root
from memd.cli.launch import search_here
from memd.cli.output import served_lines
from memd.cli.review import as_of_option

BAR_MIN_FILES = 200  # reading fewer files into the index is over before a bar would help
# Embedding is what takes long (about 10 ms of CPU per text): a bar from this many records on.
BAR_MIN_RECORDS = 200
_RANGE = re.compile(r"^(?P<doc>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$")


@click.command()
@click.argument("query")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(min=1), help="Most results to show.")
@click.option("--since", metavar="ISO", help="Only entries from this time on (date or datetime).")
@click.option("--until", metavar="ISO", help="Only entries up to this time (a date includes the whole day).")
@click.option("--source", help="Only entries with this source (user, ai, hand, import:NAME...).")
@as_of_option
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    limit: int,
    since: str | None,
    until: str | None,
    source: str | None,
    as_json: bool,
    as_of: str | None = None,
) -> None:
    """Find memories matching QUERY (BM25 over entries and heading blocks).

    Each hit is printed as `path:line`, its signature and a snippet.

    \b
    Examples:
        memd search "oat milk"
        memd search kyoto --since 2026-10-01 --source user --json
        memd search "phone number" --as-of 2026-10-01
    """
    from memd.daemon import serve

    # A running daemon has the index, the model and the vectors open: it answers at
    # once, and this process imports no more than it takes to find the vault and ask.
    args = {"query": query, "limit": limit, "since": since, "until": until, "source": source}
    # launch.py asks first: a daemon that did not answer it is not asked (and waited for) again.
    asked = (ctx.find_root().obj or {}).get("daemon_asked")
    served = None if as_of or asked else serve.request(vault_root(ctx), "search", args)
    if served is not None:
        lines, daemon = served_lines(served, as_json), True
    else:
        memory = get_memory(ctx)
        # The first search after a large import builds the index: bars show it on a terminal.
        with (
            progress_bar("indexing", quiet=as_json, minimum=BAR_MIN_FILES) as progress,
            progress_bar("embedding", quiet=as_json, minimum=BAR_MIN_RECORDS, unit="records") as embedding,
        ):
            lines, daemon = search_here(memory, args, as_json, as_of=as_of, progress=progress, embedding=embedding)
    for line, to_err in lines:
        click.echo(line, err=to_err)
    if not daemon and not as_of:
        from memd.daemon import warm

        warm.start(vault_root(ctx))  # the next search is answered warm (daemon/warm.py)


def _print_answer(
    data: dict[str, Any], warnings: list[str], fallback: str | None, as_json: bool, past: Any = None
) -> None:
    """What `memd ask` prints, from an answer's --json form (made here or by the daemon);
    ``past``: the vault as it was, for an answer ``--as-of``."""
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    if fallback:
        click.echo(f"note: {fallback}", err=True)
    if as_json:
        emit_json(past.cite_answer(data) if past else data)
        return
    click.echo(past.cite_text(data["answer"]) if past else data["answer"])
    if not data["evidence"]:
        return
    click.echo("\nevidence:" if data["found"] else "\nclosest:")
    for item in data["evidence"]:
        seq = f" seq{'s' if ', ' in str(item['seq']) else ''} {item['seq']}" if item["seq"] else ""  # a block's
        click.echo(f"  {past.cite(item['cite']) if past else item['cite']}{seq}")
        for line in item["text"].splitlines()[:6]:
            click.echo(f"    {line[:200]}")


@click.command()
@click.argument("pattern")
@click.option("--doc", help="Only this document (id, path or CURRENT).")
@click.option("--limit", default=30, show_default=True, type=click.IntRange(min=1), help="Most matches to show.")
@click.option("-C", "--context", default=3, show_default=True, type=click.IntRange(min=0), help="Lines around each.")
@click.option("-s", "--case-sensitive", is_flag=True, help="Match case exactly (default: ignore case).")
@json_option
@click.pass_context
def grep(
    ctx: click.Context, pattern: str, doc: str | None, limit: int, context: int, case_sensitive: bool, as_json: bool
) -> None:
    """Print lines of the vault matching the regular expression PATTERN.

    \b
    Examples:
        memd grep "oat ?milk"
        memd grep "seq=4[0-9]" --doc coffee-and-food -C 0
    """
    memory = get_memory(ctx)
    result = memory.grep(pattern, doc=doc, limit=limit, context=context, ignore_case=not case_sensitive).to_json()
    if as_json:
        emit_json(result)
        return
    for n, match in enumerate(result["matches"]):
        if context and n:
            click.echo("--")
        for line in match["before"]:
            click.echo(f"{match['path']}-{line['line']}-{line['text']}")
        click.echo(f"{match['path']}:{match['line']}:{match['text']}")
        for line in match["after"]:
            click.echo(f"{match['path']}-{line['line']}-{line['text']}")
    if not result["matches"]:
        click.echo("no matches", err=True)
    elif result["truncated"]:
        click.echo(f"(stopped after {limit} matches; use --limit for more)", err=True)


@click.command()
@click.argument("target")
@json_option
@click.pass_context
def read(ctx: click.Context, target: str, as_json: bool) -> None:
    """Print lines of a document: DOC, DOC:LINE or DOC:START-END (at most 100).

    \b
    Examples:
        memd read coffee-and-food
        memd read topics/travel.md:7-12
        memd read CURRENT:40
    """
    memory = get_memory(ctx)
    match = _RANGE.match(target)
    doc, start, end = target, 1, None
    if match and not (memory.vault.root / target).is_file():
        doc, start = match.group("doc"), int(match.group("start"))
        end = int(match.group("end")) if match.group("end") else start
    result = memory.read(doc, start, end).to_json()
    if as_json:
        emit_json(result)
        return
    width = len(str(result["end"]))
    for line in result["lines"]:
        click.echo(f"{line['line']:>{width}}  {line['text']}")
    if result["next"]:
        click.echo(f"(more: memd read {result['path']}:{result['next']}-{result['next'] + 99})", err=True)


@click.command(name="list")
@click.option("--offset", default=0, show_default=True, type=click.IntRange(min=0), help="Skip this many documents.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1), help="Most documents to show.")
@json_option
@click.pass_context
def list_docs(ctx: click.Context, offset: int, limit: int, as_json: bool) -> None:
    """List documents: id, tokens and summary, CURRENT first then topics.

    \b
    Examples:
        memd list
        memd list --offset 50 --limit 50 --json
    """
    result = get_memory(ctx).list(offset=offset, limit=limit).to_json()
    if as_json:
        emit_json(result)
        return
    if not result["docs"]:
        said = f"no documents past {offset} (the vault has {result['total']})" if offset else "no documents"
        click.echo(said, err=True)
        return
    width = max((len(doc["id"]) for doc in result["docs"]), default=0)
    for doc in result["docs"]:
        click.echo(f"{doc['id']:<{width}}  {doc['tokens']:>6}  {doc['summary']}")
    shown = offset + len(result["docs"])
    if shown < result["total"]:
        click.echo(f"({shown} of {result['total']}; next: memd list --offset {shown})", err=True)


@click.command()
@click.argument("question")
@click.option("--budget", default=1500, show_default=True, type=click.IntRange(min=50), help="Evidence tokens.")
@click.option("--show-steps", is_flag=True, help="Print each round of the model's tool use (stderr).")
@as_of_option
@json_option
@click.pass_context
def ask(
    ctx: click.Context, question: str, budget: int, show_steps: bool, as_json: bool, as_of: str | None = None
) -> None:
    """Answer QUESTION from memory, citing the evidence.

    With a model configured, the model searches the vault with the memory
    tools (at most 7 rounds) and answers with citations; offline, the best
    matching entries are quoted. When a configured model could not be used
    (endpoint down, an answer its evidence does not support), the offline
    answer is given and a note on stderr (and "fallback" in --json) says why.

    \b
    Examples:
        memd ask "how does Dana take her coffee?"
        memd ask "when is the Kyoto trip?" --json
        memd ask "what did Priya ask for?" --show-steps
        memd ask "what is Dana's phone number?" --as-of 2026-10-01
    """

    def report(step: Any) -> None:
        if show_steps and not as_json:
            click.echo(_describe_step(step), err=True)

    from memd.daemon import serve

    # A running daemon answers at once (steps are shown only by an answer made here).
    served = (
        None if as_of or show_steps else serve.request(vault_root(ctx), "ask", {"question": question, "budget": budget})
    )
    if served is not None:
        _print_answer(served["answer"], served.get("warnings") or [], served.get("fallback"), as_json)
        return
    memory = get_memory(ctx)
    past = None
    if as_of:
        past, answer = memory.ask_as_of(question, as_of, budget=budget, report=report)
    else:
        answer = memory.ask(question, budget=budget, report=report)
    data = answer.to_json()
    if show_steps:
        data["steps"] = [step.to_json() for step in answer.steps]
    _print_answer(data, list(answer.warnings), answer.fallback, as_json, past)
    if not as_of:
        from memd.daemon import warm

        warm.start(memory.vault.root)  # the next question is answered warm (daemon/warm.py)


def _describe_step(step: Any) -> str:
    if step.done:
        return f"round {step.round}: done" + (f" ({step.note})" if step.note else "")
    calls = []
    for call in step.calls:
        args = ", ".join(f"{key}={value!r}" for key, value in call.get("args", {}).items())
        calls.append(f"{call['tool']}({args})")
    return f"round {step.round}: {'; '.join(calls)}"


@click.command()
@json_option
@click.pass_context
def reindex(ctx: click.Context, as_json: bool) -> None:
    """Rebuild the search index from the vault's files alone.

    Never needed for correctness (searches re-index changed files and rebuild a
    stale index themselves); useful after moving a vault or to reclaim space,
    and to finish building the vectors of a large import in one go (a bar counts
    the records, with the rate and time left). Stopped (Ctrl-C), it keeps what
    it embedded, and the next run embeds only the rest.

    \b
    Example:
        memd reindex
    """
    memory = get_memory(ctx)
    with (
        progress_bar("indexing", quiet=as_json) as progress,
        progress_bar("embedding", quiet=as_json, minimum=BAR_MIN_RECORDS, unit="records") as embedding,
    ):
        report = memory.reindex(progress, embedding)
    data = {"files": len(report.updated), "records": report.records, "seconds": round(report.seconds, 3)}
    if as_json:
        emit_json(data)
    else:
        from memd.cli.output import reindex_tip

        click.echo(f"indexed {data['files']} files, {data['records']} records in {data['seconds']}s")
        tip = reindex_tip(report.embedded)
        if tip:
            click.echo(tip, err=True)
