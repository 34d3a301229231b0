"""``memd eval``: measure retrieval quality on benchmark data."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import emit_json


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
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def locomo(file: Path, no_consolidate: bool, as_json: bool) -> None:
    """Evidence recall on a LoCoMo FILE, overall and per question category.

    Each conversation is ingested into its own temporary vault (one entry per
    turn, session dates as times, src=<dia_id>), consolidated when memd can,
    and each question (categories 1-4) runs the retrieval `memd search` uses;
    results count in rank order until 300 words have been taken.

    \b
    Example:
        memd eval locomo ../shared/data/locomo-dev.json --json
    """
    from ..evaluate import run_locomo

    if sys.stderr.isatty():
        with click.progressbar(length=1, label="questions", file=sys.stderr) as bar:

            def progress(done: int, total: int, _sample: str) -> None:
                bar.length = total
                bar.update(done - bar.pos)

            report = run_locomo(file, consolidate=not no_consolidate, progress=progress)
    else:
        report = run_locomo(file, consolidate=not no_consolidate)
    if as_json:
        emit_json(report.to_json())
        return
    mode = "after consolidation" if report.consolidated else "over CURRENT (not consolidated)"
    click.echo(f"evidence recall {report.recall:.3f} on {report.questions} questions, {mode}")
    for name, row in report.by_category.items():
        click.echo(f"  {name:<14} {row['recall']:.3f}  ({row['questions']} questions)")
    click.echo(f"entries {report.entries}, topics {report.topics}, {report.seconds:.1f}s")
