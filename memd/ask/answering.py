"""How a vault answers a question: the model's agent loop, or the extractive answer.

The engine seam offers judgement steps only; answering is this package's job.
An engine with a model client (``Engine.client``) has the model run the agent
loop (agent.py), whose floor is the offline answer; without one, the offline
extractive answer (offline.py) is given. Front doors call ``Memory.ask`` and
never look at which engine runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memd.ask.answer import Answer, Report
from memd.ask.offline import EVIDENCE_TOKENS
from memd.vault.vault import Vault

if TYPE_CHECKING:
    from memd.engine.base import Engine
    from memd.index import IndexStore


def answer(
    vault: Vault,
    question: str,
    *,
    budget: int | None = None,
    report: Report | None = None,
    engine: Engine | None = None,
    store: IndexStore | None = None,
) -> Answer:
    """Answer ``question`` from the vault with ``engine`` (default: the one the
    vault is set up for). ``Answer.engine`` says who answered and
    ``Answer.fallback`` why the offline answer was given instead of a model's."""
    from memd.engine import get_engine

    engine = engine or get_engine(vault)
    client = engine.client
    if client is None:
        from memd.ask.offline import ask as offline_ask

        return offline_ask(vault, question, budget or EVIDENCE_TOKENS, store=store)
    from memd.ask.agent import agent_ask

    model = client.settings.ask_model or None
    return agent_ask(vault, question, client, model=model, report=report, budget=budget or EVIDENCE_TOKENS)
