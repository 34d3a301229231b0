"""The topics one LoCoMo conversation consolidates into: how many, their sizes,
how well they gather a multi-hop question's evidence, and random titles with
their summaries, to read by eye.

Usage: python bench/topics_report.py ../shared/data/locomo-dev.json [--conversations 1,2] [--show 20] [--seed 7]
       [--grouping meaning]   (consolidate.grouping for the vaults; default: the setting's default)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from memd.app.concentration import concentration, topic_of_turn
from memd.app.evaluate import _consolidate, _ingest, load_locomo, parse_selection
from memd.core.document import parse_document
from memd.core.tokens import count_tokens


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file", type=Path)
    parser.add_argument("--conversations", default="1")
    parser.add_argument("--show", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--grouping", choices=("words", "meaning"))
    args = parser.parse_args()
    if args.grouping:
        os.environ["MEMD_GROUPING"] = args.grouping
    conversations = load_locomo(args.file)
    for number in parse_selection(args.conversations, len(conversations)):
        conversation = conversations[number - 1]
        with tempfile.TemporaryDirectory(prefix="memd-topics-") as folder:
            vault = _ingest(Path(folder) / "vault", conversation)
            clock = time.process_time()
            _consolidate(vault)
            cpu = time.process_time() - clock
            spread = concentration(topic_of_turn(vault), conversation.questions)
            rows = []
            for path in vault.topic_files():
                document = parse_document(path.read_text(encoding="utf-8"))
                data = document.frontmatter.data if document.frontmatter is not None else {}
                body = [e.entry.full_text for e in document.signed()]
                rows.append((path.stem, document.title() or "", str(data.get("summary", "")), body))
            sizes = sorted(sum(count_tokens(t) for t in body) for *_, body in rows)
            print(
                f"## conversation {number} ({conversation.sample_id}): {len(rows)} topics, "
                f"tokens median {statistics.median(sizes) if sizes else 0:.0f} max {max(sizes, default=0)}, "
                f"evidence concentration {sum(spread) / len(spread) if spread else float('nan'):.3f} "
                f"over {len(spread)} questions, consolidation {cpu:.1f} s CPU"
            )
            chosen = random.Random(args.seed).sample(rows, min(args.show, len(rows)))
            for slug, title, summary, body in sorted(chosen):
                print(f"- {title}  [{slug}, {len(body)} entries]\n    {summary}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
