"""Does a model's text say only what its sources say? A lexical support check.

Every model output that becomes memory text (an extracted entry, a reworded
or merged entry, a summary) or reaches a person (an answer) is checked
against the texts it claims to come from:

- every content word of a sentence that becomes memory appears in the
  sources (function words aside: ``FUNCTION_WORDS``); an answer, which may
  phrase its evidence, needs a share ``threshold`` of its terms;
- words that judge, feel, stress or hedge (``MARKED``: "glad", "bad",
  "great", "never", "always", "only") appear in the sources, in memory text
  and answers alike: one added to a sentence changes what was said as surely
  as an invented name;
- numbers and proper names appear exactly (a date may also be one the
  sources' entry times make plain: within ``DATE_WINDOW`` of one of them);
- a negation is kept: a sentence negates exactly when the source sentence it
  rests on does.

It is deliberately lexical and strict: a model that paraphrases freely fails
it and the step is done by the offline rules, which never reword.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, timedelta

from memd.core.errors import FormatError
from memd.core.timeutil import parse_time
from memd.engine.text import SENTENCE_BREAK, STOPWORDS, stem, terms

EVERY_WORD = 1.0  # memory text: every content word must be in the sources
ANSWER_SUPPORT = 0.6  # answers may phrase the evidence, never add facts to it
DATE_WINDOW = timedelta(days=31)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NEGATIONS = frozenset(
    "not no never none nobody nothing nowhere neither nor without cannot isnt arent wasnt werent dont doesnt didnt "
    "cant couldnt wont wouldnt shouldnt hasnt havent hadnt aint".split()
)
_MONTHS = {
    name: n
    for n, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATES = [
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?:T[\d:.]+Z?)?\b"),
    re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mn>{_MONTH})\.?,?\s+(?P<y>\d{{4}})\b", re.I),
    re.compile(rf"\b(?P<mn>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b", re.I),
    re.compile(rf"\b(?P<mn>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b", re.I),
    re.compile(rf"\b(?P<mn>{_MONTH})\s+(?P<y>\d{{4}})\b", re.I),
]
_PRONOUN_I = re.compile(r"^I(?:'\w+)?$")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
# Closed-class words: a model may use them freely, they carry no claim of
# their own. Everything else is content (negations have their own check).
FUNCTION_WORDS = frozenset(
    """
    a an the this that these those there here i me my mine myself you your yours yourself yourselves he him his
    himself she her hers herself it its itself we us our ours ourselves they them their theirs themselves one ones
    who whom whose which what when where why how am is are was were be been being have has had having do does did
    doing will would shall should can could may might must to of in on at by for with from about into onto over
    under up down out off through during before after above below between among across along around behind near
    since until upon via per than as like and or but so yet if then else because while although though whether
    unless once also s ll ve re d m t yes oh ok okay
    """.split()
)
# Words that judge, feel, intensify or hedge: chatter to topic statistics
# (text.STOPWORDS), but a claim when a model adds one to what someone said.
MARKED = frozenset(
    """
    glad bad sorry happy sad unhappy good great nice cool awesome amazing wonderful fantastic terrible awful
    horrible lovely love loved loves hate hated hates proud excited thrilled upset angry worried afraid scared
    lucky unlucky fortunately unfortunately sadly luckily hopefully thankfully best worst better worse beautiful
    perfect favourite favorite fun boring interesting important kind helpful
    very really extremely totally absolutely completely definitely certainly surely truly quite too super highly
    deeply especially incredibly
    maybe perhaps probably possibly likely unlikely apparently seemingly almost nearly just only never always
    usually often rarely sometimes ever even still already all every everyone everything everybody most
    """.split()
)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_BREAK.split(text) if s and s.strip()]


def _words(text: str) -> list[str]:
    return _WORD.findall(text.replace("\u2019", "'"))


def negated(text: str) -> bool:
    return any(w.lower().replace("'", "") in _NEGATIONS or w.lower().endswith("n't") for w in _words(text))


def numbers(text: str) -> set[str]:
    return {_plain_number(n) for n in _NUMBER.findall(text)}


def _plain_number(raw: str) -> str:
    cleaned = raw.replace(",", "")
    return cleaned.lstrip("0") or "0"


def _dates(text: str) -> tuple[list[tuple[date | None, str]], str]:
    """Date expressions in ``text`` (the date, or None when partial) and the
    text with them cut out."""
    found: list[tuple[date | None, str]] = []
    for pattern in _DATES:

        def cut(match: re.Match[str]) -> str:
            groups = match.groupdict()
            month = int(groups["m"]) if groups.get("m") else _MONTHS.get((groups.get("mn") or "").lower().rstrip("."))
            try:
                day = (
                    date(int(groups["y"]), month or 0, int(groups["d"]))
                    if groups.get("y") and groups.get("d")
                    else None
                )
            except ValueError:
                return match.group(0)  # not a real date: its numbers are checked as numbers
            found.append((day, match.group(0)))
            return " "

        text = pattern.sub(cut, text)
    return found, text


def _names(sentence: str, initial: bool) -> list[str]:
    """Capitalised words (after the first, unless ``initial``) and acronyms."""
    words = _words(sentence)
    out = []
    for n, word in enumerate(words):
        if _PRONOUN_I.match(word) or not word[0].isupper():
            continue
        if n == 0 and (not initial or word.lower() in STOPWORDS) and not (len(word) > 1 and word.isupper()):
            continue  # a sentence's first word is capitalised anyway
        out.append(re.sub(r"'s$", "", word).lower())
    return out


class Sources:
    """The texts a model output must rest on, prepared once."""

    def __init__(self, texts: Iterable[str], times: Iterable[str | None] = ()) -> None:
        self.texts = [t for t in texts if t]
        joined = "\n".join(self.texts)
        self.terms = set(terms(joined)) | {t for text in self.texts for t in terms(text)}
        self.words = {re.sub(r"'s$", "", w).lower() for w in _words(joined)}
        self.sentences = [s for text in self.texts for s in sentences(text)]
        dates, rest = _dates(joined)
        self.numbers = numbers(rest) | numbers(joined)
        self.dates = {d for d, _ in dates if d is not None}
        self.times: list[date] = []
        for value in times:
            if not value:
                continue
            try:
                self.times.append(parse_time(value).date())
            except FormatError:
                continue
        self.dates |= set(self.times)

        self.stems = {stem(w) for w in self.words}
        self.months = {_MONTHS[w] for w in self.words if w in _MONTHS} | {d.month for d in self.dates}
        self.chars = set(joined)

    def date_ok(self, day: date | None, raw: str) -> bool:
        if day is None:
            # A partial date ("May 8", "May 2023"): its parts must be in the sources.
            months = {_MONTHS[w] for w in re.findall(r"[a-z]+", raw.lower()) if w in _MONTHS}
            return months <= self.months and all(_plain_number(n) in self.numbers for n in _NUMBER.findall(raw))
        return day in self.dates or any(abs(day - t) <= DATE_WINDOW for t in self.times)

    def has(self, word: str) -> bool:
        """The word (or its stem) is in the sources; CJK text, which has no
        spaces, by its characters."""
        if _CJK.search(word):
            return all(ch in self.chars for ch in word)
        return word in self.words or stem(word) in self.stems


def added_words(sentence: str, sources: Sources) -> list[str]:
    """The content words of ``sentence`` its sources do not have (numbers,
    negations and function words aside), lowercased, in order, once each."""
    found: list[str] = []
    for raw in _words(sentence):
        word = re.sub(r"'s$", "", raw.lower())
        bare = word.replace("'", "")
        negation = (bare in _NEGATIONS or word.endswith("n't")) and word not in MARKED  # "never" says more
        if any(c.isdigit() for c in word) or negation:
            continue
        if word.split("'")[0] in FUNCTION_WORDS or word in found or sources.has(word):
            continue
        found.append(word)
    return found


def unsupported(
    text: str,
    sources: Sources,
    *,
    threshold: float = EVERY_WORD,
    initial_names: bool = True,
) -> str | None:
    """Why ``text`` is not supported by ``sources``, or None when it is.
    ``threshold`` under 1 lets a share of a sentence's terms be the model's
    own (answers); marked words never are."""
    problems = []
    for sentence in sentences(text):
        dates, rest = _dates(sentence)
        bad_dates = [raw for day, raw in dates if not sources.date_ok(day, raw)]
        if bad_dates:
            problems.append(f"the date {bad_dates[0]!r} is not in its sources")
            continue
        missing_numbers = sorted(numbers(rest) - sources.numbers)
        if missing_numbers:
            problems.append(f"the number {missing_numbers[0]} is not in its sources")
            continue
        names = [n for n in _names(rest, initial_names) if n not in sources.words]
        if names:
            problems.append(f"the name {names[0]!r} is not in its sources")
            continue
        added = added_words(rest, sources)
        marked = [w for w in added if w in MARKED]
        if marked:
            problems.append(f"{_clip(sentence)!r} adds {marked[0]!r}, which its sources do not say")
            continue
        if threshold >= EVERY_WORD:
            if added:
                problems.append(f"{_clip(sentence)!r} says what its sources do not ({', '.join(added[:5])})")
                continue
        elif words := terms(rest):
            missing = [w for w in words if w not in sources.terms]
            if (len(words) - len(missing)) / len(words) < threshold:
                shown = ", ".join(dict.fromkeys(missing[:5]))
                problems.append(f"{_clip(sentence)!r} says what its sources do not ({shown})")
                continue
        problem = _negation(rest, sources)
        if problem:
            problems.append(f"{_clip(sentence)!r} {problem}")
    return "; ".join(problems[:3]) or None


def _negation(sentence: str, sources: Sources) -> str | None:
    """A negated sentence needs a negated source sentence on its subject; an
    unnegated one may not rest only on negated source sentences."""
    words = set(terms(sentence))
    if not words:
        return None
    overlaps = [(len(words & set(terms(s))), negated(s), s) for s in sources.sentences]
    related = [o for o in overlaps if o[0]]
    if not related:
        return None
    if negated(sentence):
        if not any(neg for _, neg, _ in related):
            return f"adds a negation to {_clip(max(related)[2])!r}"
        return None
    best = max(shared for shared, _, _ in related)
    closest = [(neg, s) for shared, neg, s in related if shared == best]
    if all(neg for neg, _ in closest):
        return f"drops the negation of {_clip(closest[0][1])!r}"
    return None


def same_subject(a: str, b: str) -> bool:
    """Two statements share at least one content word (speaker labels aside)."""
    return bool(set(terms(a)) & set(terms(b)))


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
