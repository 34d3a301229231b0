"""``memd eval``: measure retrieval quality on benchmark data."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memd.cli import emit_json, json_option


@click.group(name="eval")
def eval_group() -> None:
    """Measure memd's retrieval on benchmark data.

    \b
    Example:
        memd eval locomo ../shared/data/locomo-dev.json
    """


@eval_group.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--no-consolidate", is_flag=True, help="Measure over CURRENT, without consolidating first.")
@click.option("--conversations", metavar="N-M", help="Only these conversations (1-based): 1-3, 4,5 or 2.")
@click.option(
    "--backend",
    type=click.Choice(["whoosh", "tantivy"]),
    help="Index backend to measure (default: [index] backend, MEMD_INDEX_BACKEND).",
)
@click.option("--no-abstention", is_flag=True, help="Measure retrieval only (skip asking every question offline).")
@json_option
def locomo(
    file: Path, no_consolidate: bool, conversations: str | None, backend: str | None, no_abstention: bool, as_json: bool
) -> None:
    """Evidence recall on a LoCoMo FILE, overall and per question category.

    Each conversation is ingested into its own temporary vault (one entry per
    turn, session dates as times, src=<dia_id>), consolidated when memd can,
    and each question (categories 1-4) runs the retrieval `memd search` uses;
    results count in rank order until 300 words have been taken. Reported
    beside recall: answer coverage (the share of the gold answer's words in
    the text taken), mean words taken, query latency, and the same figures
    for words-only (lexical) retrieval, measured in the same run. Every
    question is also put to the offline `memd ask`: per category, the share
    of answers containing the expected answer (normalised: case,
    punctuation, number words, dates), the share holding at least half of
    its content words, and the share refused (category 5 is unanswerable:
    refusing is right).

    \b
    Example:
        memd eval locomo ../shared/data/locomo-dev.json --conversations 1-3 --json
        memd eval locomo ../shared/data/locomo-dev.json --backend tantivy
    """
    from memd.app.evaluate import LEXICAL, run_locomo

    def run(progress=None):  # type: ignore[no-untyped-def]
        return run_locomo(
            file,
            consolidate=not no_consolidate,
            progress=progress,
            conversations=conversations,
            backend_name=backend,
            abstention=not no_abstention,
        )

    if sys.stderr.isatty() and not as_json:
        with click.progressbar(length=1, label="questions", file=sys.stderr) as bar:

            def progress(done: int, total: int, _sample: str) -> None:
                bar.length = total
                bar.update(done - bar.pos)

            report = run(progress)
    else:
        report = run()
    if as_json:
        emit_json(report.to_json())
        return
    mode = "after consolidation" if report.consolidated else "over CURRENT (not consolidated)"
    main = report.main
    lexical = report.scores.get(LEXICAL)
    click.echo(f"evidence recall {main.recall:.3f} on {report.questions} questions, {mode}")
    click.echo(f"retrieval {report.retrieval}, index {report.index_backend}")
    header = f"  {'':<14} {'recall':>7} {'coverage':>9}"
    click.echo(header + (f" {'words only':>11}" if lexical else ""))
    rows = [("overall", main.recall, main.coverage, lexical.recall if lexical else None)]
    for name, row in main.by_category.items():
        other = lexical.by_category[name]["recall"] if lexical else None
        rows.append((f"{name} ({row['questions']})", float(row["recall"]), float(row["coverage"]), other))
    for name, recall, coverage, other in rows:
        click.echo(f"  {name:<14} {recall:>7.3f} {coverage:>9.3f}" + (f" {other:>11.3f}" if other is not None else ""))
    latency = main.latency_ms
    click.echo(
        f"words taken {main.words:.0f} per question; query p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms"
    )
    if report.abstention:
        a = report.abstention
        click.echo(
            f"abstention: {a.unanswerable:.3f} of {a.unanswerable_questions} unanswerable (category 5) questions, "
            f"{a.answerable:.3f} of {a.answerable_questions} answerable ones"
        )
    if report.answers:
        click.echo(f"  {'offline answers':<20} {'contain':>8} {'half words':>11} {'refused':>8}")
        for name, row in report.answers.items():
            shares = (row["contains_answer"], row["half_words"])
            contains = f"{shares[0]:>8.3f} {shares[1]:>11.3f}" if None not in shares else f"{'':>20}"
            click.echo(f"  {name + ' (' + str(row['questions']) + ')':<20} {contains} {row['refused']:>8.3f}")
    click.echo(f"entries {report.entries}, topics {report.topics}, {report.seconds:.1f}s")
    if report.evidence_concentration is not None:
        click.echo(
            f"evidence concentration {report.evidence_concentration:.3f}"
            " (distinct topics per evidence turn of a multi-hop question; lower gathers more)"
        )
