"""Random sections of the topics LoCoMo conversations consolidate into, to read by eye.

Usage: python bench/sample_sections.py ../shared/data/locomo-dev.json OUT.json [--per 20] [--seed 7]

Each conversation is ingested and consolidated as ``memd eval locomo`` does;
the sections holding entries of its topics are shuffled with ``--seed`` and
the first ``--per`` written to OUT.json: conversation, topic file, heading,
how many entries, and the first 25 entries without their signatures. What
``bench/data/section-headings-read.md`` was read from.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
from pathlib import Path

from memd.app.evaluate import _consolidate, _ingest, load_locomo

_HEADING = re.compile(r"^(#+) (.*)")
_SIGNATURE = re.compile(r"<seq=[^>]*>\s*")


def sections_of(topics: Path) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for path in sorted(topics.glob("*.md")):
        current: dict[str, object] | None = None
        entries: list[str] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            heading = _HEADING.match(line)
            if heading:
                entries = []
                current = {"file": path.name, "heading": heading.group(2), "entries": entries}
                found.append(current)
            elif current is not None and line.startswith("- "):
                entries.append(_SIGNATURE.sub("", line[2:]).strip())
    return [section for section in found if section["entries"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--per", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    out: list[dict[str, object]] = []
    for conversation in load_locomo(args.file):
        with tempfile.TemporaryDirectory() as tmp:
            vault = _ingest(Path(tmp) / "vault", conversation)
            _consolidate(vault)
            sections = sections_of(vault.root / "topics")
        random.Random(args.seed).shuffle(sections)
        for section in sections[: args.per]:
            entries = section["entries"]
            assert isinstance(entries, list)
            out.append(
                {"conversation": conversation.sample_id, **section, "count": len(entries), "entries": entries[:25]}
            )
        print(f"{conversation.sample_id}: {len(sections)} sections holding entries")
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
