"""The model's answer from the evidence an ask gathered, checked before anyone
sees it (memd/ask/agent.py): citations outside the evidence are removed and
their claims marked unsupported; an answer that cites nothing shown, or says
what its cited evidence does not, is refused with the reason, and the caller
shows the extractive answer instead.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memd.ask.answer import Evidence
from memd.ask.offline import asked_today
from memd.engine.breaker import Unavailable
from memd.engine.client import ModelClient, ModelError
from memd.engine.fidelity import ANSWER_SUPPORT, Sources, sentences, unsupported
from memd.engine.output import BadOutput, Reply, parse_json
from memd.engine.prompts import load
from memd.engine.sizes import prompt_size
from memd.engine.steps import NoValidReply, check_echo, echoes_of, until_valid

ANSWER_TOKENS = 320  # max_tokens of the answer
UNSUPPORTED = "[unsupported]"
_CITATION = re.compile(r"\[([^\[\]\s]+:\d+(?:-\d+)?)\]")


def grounded_answer(
    question: str, evidence: list[Evidence], client: ModelClient, model: str | None
) -> tuple[str, set[str], str | None]:
    """The model's grounded answer and the refs it cites, or a reason it may
    not be shown (then the caller shows the extractive answer); no text and
    no reason: the model found no answer in the evidence."""
    refs = {e.record.cite: e.record for e in evidence}
    system = load("answer")
    context = client.context_tokens(model)
    shown = list(refs.items())
    while True:
        payload = {
            "question": question,
            "today": asked_today().isoformat(),  # the --as-of date, if any
            "evidence": [{"ref": cite, "seq": r.seq, "time": r.time, "text": r.text} for cite, r in shown],
        }
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
        ]
        if prompt_size(messages) + ANSWER_TOKENS <= context or len(shown) <= 1:
            break
        shown = shown[:-1]  # the least relevant evidence goes first
    refs = dict(shown)
    echoes, copied = echoes_of(system, messages[1]["content"])

    def answered(text: str) -> tuple[str, set[str], str | None]:
        data = parse_json(text)
        check_echo(data, echoes, payload, copied)
        if data.get("found") is False:
            return "", set(), None  # the evidence holds no answer: the caller says so
        answer, cited = _grounded(data, refs, question)
        return answer, cited, None

    def complete(asked: list[dict[str, str]], limit: int) -> Reply:
        return client.complete("answer", asked, max_tokens=limit, model=model)

    try:
        return until_valid(complete, messages, answered, limit=ANSWER_TOKENS, context=context)
    except (ModelError, Unavailable) as err:
        return "", set(), f"{err}; showing the extractive answer"
    except NoValidReply as err:
        return "", set(), f"the model's answer was not used ({err}); showing the extractive answer"


def _grounded(data: dict[str, Any], refs: dict[str, Any], question: str) -> tuple[str, set[str]]:
    """Validate types, drop citations outside the evidence (marking their
    claims), and require the answer's words to rest on what it cites."""
    text = data.get("answer")
    if not isinstance(text, str) or not text.strip():
        raise BadOutput("answer must be non-empty text")
    listed = data.get("cited")
    if not isinstance(listed, list) or not all(isinstance(c, str) for c in listed):
        raise BadOutput('"cited" must be a list of the evidence refs the answer uses')
    cited = {c for c in listed if c in refs}
    kept = []
    for sentence in sentences(text.strip()):
        marks = _CITATION.findall(sentence)
        good = [m for m in marks if m in refs]
        bare = " ".join(_CITATION.sub(lambda m: f"[{m.group(1)}]" if m.group(1) in refs else "", sentence).split())
        if marks and not good:
            body, stop = (bare[:-1].rstrip(), bare[-1]) if bare[-1:] in ".!?" else (bare, "")
            bare = f"{body} {UNSUPPORTED}{stop}"
        cited.update(good)
        kept.append(bare)
    if not cited:
        raise BadOutput("the answer cites none of the evidence it was shown")
    records = [refs[c] for c in cited]
    sources = Sources([question, *(r.text for r in records)], [r.time for r in records])
    plain = _CITATION.sub("", " ".join(kept)).replace(UNSUPPORTED, "")
    problem = unsupported(plain, sources, threshold=ANSWER_SUPPORT, initial_names=False)
    if problem:
        raise BadOutput(f"the answer is not supported by the evidence it cites: {problem}")
    return " ".join(kept), cited
