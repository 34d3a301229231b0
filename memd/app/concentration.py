"""Evidence concentration: how well topics gather what belongs together,
measured on a multi-hop question's evidence turns (``memd eval locomo``)."""

from __future__ import annotations

from memd.ingest.locomo import Question
from memd.vault.vault import Vault


def concentration(topic_of: dict[str, str], questions: tuple[Question, ...]) -> list[float]:
    """For each multi-hop question with at least two evidence turns filed in
    topics: distinct topics holding them / those turns. 1.0 means every turn
    sits in a topic of its own; 1/n means all n share one topic. Topics are
    meant to gather what belongs together, and a multi-hop question's
    evidence is facts that belong together."""
    found = []
    for question in questions:
        if question.category != 1:
            continue
        filed = [topic_of[turn] for turn in dict.fromkeys(question.evidence) if turn in topic_of]
        if len(filed) >= 2:
            found.append(len(set(filed)) / len(filed))
    return found


def topic_of_turn(vault: Vault) -> dict[str, str]:
    """Each turn id (an entry's ``src``) -> the topic file holding it."""
    found: dict[str, str] = {}
    for path in vault.topic_files():
        for located in vault.read(path).signed():
            signature = located.entry.signature
            for ref in ((signature.src if signature else None) or "").split(";"):
                if ref.strip():
                    found[ref.strip()] = path.name
    return found
