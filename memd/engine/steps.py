"""One model step: prompt, bounded call, strict validation, at most one retry.

A step's reply is parsed leniently (code fences, text around the JSON), then
must pass the step's own validation, the echo check (it may not copy the
prompt's examples or placeholders, nor hand its input back) and, where it
writes memory text, the fidelity check (fidelity.py). An invalid reply is
sent back once with the reason; a reply cut at the length limit is asked for
again only with a larger limit, never the same one. A second failure, an
endpoint error, a prompt too big for the model's context, or a run whose
model is unavailable (breaker open, budget spent) makes the step fall back
to the offline engine; the operation and cause are kept for the run's
warnings (notes.py). A batch the server refuses as longer than its window is
cut smaller and asked again; a single input it refuses is done offline.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import reduce
from pathlib import Path
from typing import Any, TypeVar

from memd.core.words import holder_of
from memd.engine.base import Item, Supersession
from memd.engine.breaker import Unavailable
from memd.engine.client import BudgetSpent, ContextExceeded, ModelClient, ModelError
from memd.engine.fidelity import same_subject
from memd.engine.notes import Fell, lines
from memd.engine.output import BadOutput, Reply, parse_json
from memd.engine.prompts import is_placeholder, load, normal, numbers_in, template_numbers, template_strings
from memd.engine.rules import combine, foldable
from memd.engine.sizes import more_room, prompt_size
from memd.engine.text import terms

T = TypeVar("T")
MAX_TEXT = 4000
TITLE_SUPPORT = 0.5
_UNSAFE = frozenset("/\\")


class Copied(BadOutput):
    """The reply copies the prompt's format or example instead of doing the step."""

    cause = "placeholder copy"


class _TooLong(Exception):
    """The server refused a batch as longer than its window: cut it smaller."""


def cause_of(err: Exception) -> str:
    """Why a step went offline, in a word or two."""
    if isinstance(err, BudgetSpent):
        return "budget spent"
    if isinstance(err, Unavailable):
        return "endpoint paused"
    if isinstance(err, ModelError | BadOutput):
        return err.cause
    return "failed"


class Stepper:
    """Runs the steps of one engine; collects why steps fell back."""

    def __init__(self, client: ModelClient, vault_meta: Path | None) -> None:
        self.client = client
        self.vault_meta = vault_meta
        self.fell: list[Fell] = []
        self._splittable = False  # the step running is a batch in_chunks may cut smaller

    def begin(self, run: str) -> None:
        self.client.begin(run)
        self.fell = []

    def drain(self) -> list[str]:
        """One warning line per operation and cause of the steps done offline since the last drain."""
        notes = lines(self.fell)
        self.fell = []
        return notes

    def _fall(self, operation: str, cause: str, detail: str) -> None:
        self.fell.append(Fell(operation, cause, detail.removeprefix(f"{operation}: ")))

    def messages(self, operation: str, payload: dict[str, Any]) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": load(operation, self.vault_meta)},
            {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
        ]

    def fits(self, operation: str, payload: dict[str, Any], max_tokens: int) -> bool:
        """Prompt and expected reply fit the model's context window."""
        try:
            context = self.client.context_tokens()
        except Unavailable:
            return True  # the step will not call the model anyway
        return prompt_size(self.messages(operation, payload)) + max_tokens <= context

    def in_chunks(
        self,
        indices: list[int],
        request: Callable[[list[int]], tuple[str, dict[str, Any], int]],
        run: Callable[[list[int]], None],
        most: int | None = None,
    ) -> None:
        """Run ``run`` over consecutive chunks of ``indices`` as large as fit the
        model's context (and ``most``): work is split, never truncated."""
        start = 0
        while start < len(indices):
            end = start + 1
            while end < len(indices) and (most is None or end - start < most):
                operation, payload, limit = request(indices[start : end + 1])
                if not self.fits(operation, payload, limit):
                    break
                end += 1
            self._splittable = end - start > 1
            try:
                run(indices[start:end])
            except _TooLong:
                # The client's window is now below the refused prompt, so the
                # chunk from here comes out smaller: never the same request.
                continue
            finally:
                self._splittable = False
            start = end

    def available(self, operation: str = "") -> bool:
        try:
            self.client.available()
        except Unavailable as err:
            self._fall(operation, cause_of(err), str(err))
            return False
        return True

    def run(
        self,
        operation: str,
        payload: dict[str, Any],
        valid: Callable[[dict[str, Any]], T],
        fallback: Callable[[], T],
        *,
        max_tokens: int,
    ) -> T:
        splittable, self._splittable = self._splittable, False  # nested steps are not the batch
        if not self.available(operation):
            return fallback()
        messages = self.messages(operation, payload)
        context = self.client.context_tokens()
        if prompt_size(messages) + max_tokens > context:
            self._fall(operation, "context window", f"the prompt does not fit the model's context ({context} tokens)")
            return fallback()
        echoes, copied = echoes_of(messages[0]["content"], messages[1]["content"])
        sent: list[int] = []  # the length of each conversation sent

        def checked(text: str) -> T:
            data = parse_json(text)
            check_echo(data, echoes, payload, copied)
            return valid(data)

        def complete(asked: list[dict[str, str]], limit: int) -> Reply:
            sent.append(len(asked))
            return self.client.complete(operation, asked, max_tokens=limit)

        try:
            return until_valid(complete, messages, checked, limit=max_tokens, context=context)
        except Unavailable as err:
            self._fall(operation, cause_of(err), str(err))
            return fallback()
        except ContextExceeded as err:
            if splittable and sent[-1:] == [2]:
                raise _TooLong() from None  # refused unread as first asked: the batch is cut smaller
            problem, cause = str(err), cause_of(err)
        except (ModelError, BadOutput) as err:
            problem, cause = str(err), cause_of(err)
        self._fall(operation, cause, problem)
        return fallback()


Complete = Callable[[list[dict[str, str]], int], Reply]


class NoValidReply(BadOutput):
    """No reply passed, in as many tries as a step is given; the last one's reason is kept."""

    def __init__(self, problem: str, cause: str) -> None:
        super().__init__(problem)
        self.cause = cause


def until_valid(
    complete: Complete,
    messages: list[dict[str, str]],
    valid: Callable[[str], T],
    *,
    limit: int,
    context: int,
    tries: int = 2,
) -> T:
    """The first reply ``valid`` accepts, in at most ``tries`` calls of
    ``complete(messages, max_tokens)``: the one loop every model call shares
    (engine steps, the ask agent, its answer). A reply cut at the length limit
    is asked for again only with more room, never the same limit; an invalid
    one is sent back with the reason while the conversation still fits
    ``context``. Raises ``NoValidReply`` with the last reason; what
    ``complete`` raises (the endpoint failing) is the caller's to handle."""
    problem, cause = "the model gave no usable reply", "failed"
    for _attempt in range(tries):
        reply = complete(messages, limit)
        if reply.truncated:
            problem, cause = f"the reply stopped at the length limit ({limit} tokens)", "length limit"
            roomier = more_room(messages, limit, context)
            if roomier is None:
                break
            limit = roomier
            continue
        try:
            return valid(reply.text)
        except BadOutput as err:
            problem, cause = str(err), cause_of(err)
            messages = [
                *messages,
                {"role": "assistant", "content": reply.text[:MAX_TEXT]},
                {"role": "user", "content": f"That reply was not valid: {err}. Reply again with only the JSON object."},
            ]
            if prompt_size(messages) + limit > context:
                break
    raise NoValidReply(problem, cause)


# --- checks every step shares ------------------------------------------------


def echoes_of(system: str, shown: str) -> tuple[set[str], frozenset[str]]:
    """The template's strings and numbers that its input does not hold: a
    reply carrying one copied the prompt instead of reading the input."""
    text = normal(shown)
    strings = {e for e in template_strings(system) if e not in text}
    return strings, template_numbers(system) - numbers_in(shown)


def check_echo(data: Any, echoes: set[str], payload: dict[str, Any], numbers: frozenset[str] = frozenset()) -> None:
    """A reply that hands back its input or copies the prompt's example or
    placeholders (its strings, or numbers its input does not hold) did not do
    the step."""
    if data == payload:
        raise Copied("the reply repeats its input instead of answering")
    copied = sorted(numbers & _numbers(data), key=len)
    if copied:
        raise Copied(f"the reply copies the number {copied[0]} from the prompt's example; answer from the input")
    for value in _strings(data):
        if is_placeholder(value):
            raise Copied(f"the reply copies the placeholder {value!r} from the prompt's format")
        text = normal(value)
        for echo in echoes:
            if echo and echo in text:
                raise Copied(f"the reply copies the prompt's example ({echo!r}); answer from the input")


def _numbers(data: Any) -> set[str]:
    """The numbers a reply gives as values (``12``, ``"12"``)."""
    if isinstance(data, bool):
        return set()
    if isinstance(data, int | float):
        return {str(data)}
    if isinstance(data, str):
        return {data.strip()} if data.strip().lstrip("-").isdigit() else set()
    if isinstance(data, dict):
        return {n for v in data.values() for n in _numbers(v)}
    if isinstance(data, list):
        return {n for v in data for n in _numbers(v)}
    return set()


def _strings(data: Any) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for v in data.values() for s in _strings(v)]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return []


def field(data: Any, name: str) -> Any:
    if not isinstance(data, dict) or name not in data:
        raise BadOutput(f"missing {name!r}")
    return data[name]


def listed(data: Any, name: str) -> list[Any]:
    value = field(data, name)
    if not isinstance(value, list):
        raise BadOutput(f"{name!r} must be a list")
    return value


def text_of(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadOutput(f"{what} must be non-empty text")
    if len(value) > MAX_TEXT:
        raise BadOutput(f"{what} is too long")
    return value.strip()


def title_of(value: Any, texts: list[str] | None = None) -> str:
    """A plain, short title whose words (when ``texts`` are given) come mostly
    from the entries it names."""
    title = " ".join(text_of(value, "title").split())
    if len(title) > 80 or ".." in title or _UNSAFE & set(title) or any(ord(c) < 32 for c in title):
        raise BadOutput(f"unsafe or overlong title {title[:60]!r}")
    if texts is not None:
        words = terms(title)
        known = {t for text in texts for t in terms(text)}
        if words and sum(w in known for w in words) / len(words) < TITLE_SUPPORT:
            raise BadOutput(f"the title {title!r} is not about its entries")
    return title


def known(value: Any, keyed: dict[str, Any]) -> str:
    key = str(value)
    if key not in keyed:
        raise BadOutput(f"unknown seq {key!r}")
    return key


def seqs_of(entry: Any, keyed: dict[str, Item], name: str = "seqs") -> list[str]:
    keys = [known(k, keyed) for k in listed(entry, name)]
    if not keys:
        raise BadOutput("an entry lists no seqs")
    return keys


def merged_entry(keys: list[str], keyed: dict[str, Item]) -> Item:
    """An output entry as an Item, its words and metadata always memd's: a
    consolidation never rewords an entry (``memd verify`` proves it), so the
    model only says which entries repeat each other, and they fold only when
    one of them says everything the others said (``rules.foldable``)."""
    members = sorted((keyed[k] for k in keys), key=lambda i: i.seqs.last)
    holder = holder_of([m.text for m in members])
    if holder is None or not all(foldable(members[holder], m) for m in members):
        raise BadOutput(
            f"seqs {', '.join(keys)} say different things; merge only entries whose words one of them "
            "holds in full, with the same metadata"
        )
    return reduce(combine, members)


def checked_supersession(record: Any, keyed: dict[str, Item], holder: Item | None) -> Supersession:
    """``new`` may supersede ``old`` only when it is newer and about the same subject."""
    old = known(field(record, "old"), keyed)
    new = known(field(record, "new"), keyed)
    if holder is None or old == new:
        raise BadOutput(f"superseded record {record!r} does not name a kept newer entry")
    if not newer(keyed[new], keyed[old]):
        raise BadOutput(f"seq {new} cannot supersede seq {old}: it is not newer")
    if not same_subject(keyed[new].text, keyed[old].text):
        raise BadOutput(f"seq {new} cannot supersede seq {old}: they are not about the same thing")
    reason = record.get("reason") if isinstance(record, dict) else None
    return Supersession(holder.seqs, keyed[old].seqs, str(reason or "")[:200])


def newer(a: Item, b: Item) -> bool:
    """``a`` was said after ``b``: by time when both have one, else by seq."""
    ta, tb = a.moment, b.moment
    if ta is not None and tb is not None and ta != tb:
        return ta > tb
    return a.seqs.last > b.seqs.last


def all_once(keys: list[str], used: list[str]) -> None:
    missing = [k for k in keys if k not in used]
    if missing:
        raise BadOutput(f"seqs dropped: {', '.join(missing[:10])}; every seq must appear exactly once")
    repeated = sorted({k for k in used if used.count(k) > 1})
    if repeated:
        raise BadOutput(f"seqs repeated: {', '.join(repeated[:10])}")
