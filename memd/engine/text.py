"""Lexical statistics for the offline engine: terms, weights, similarity."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache

# Function words, plus the chatter of conversation (greetings, praise,
# hedges) that says nothing about what a memory is about.
_STOPWORD_TEXT = """
a about above after again against all also am an and any are aren as at be because been before being below
between both but by can could did didn do does doesn doing don down during each else even ever every few for
from further get gets got had hadn has hasn have haven having he her here hers herself him himself his how i
if in into is isn it its itself just like ll m me might more most much must my myself no nor not now of off
oh ok okay on once one only or other our ours ourselves out over own re really s same she should so some such
t than that the their theirs them themselves then there these they this those through to too under until up
us ve very was wasn way we well were weren what when where which while who whom why will with won would yeah
yes you your yours yourself yourselves thing things lot lots bit something anything everything going gonna
want wanna know think see say said tell told make made let lets sure kind still always never maybe pretty
wow great awesome cool amazing nice glad thanks thank hey hi hello bye sounds sound totally definitely
absolutely super lovely wonderful fantastic incredible cute fun happy excited feel feeling felt good bad
sorry hope hoping hopefully guess mean means yep nope hmm haha lol omg btw gotta wait come came far last
since wanted look looking looks show give part take taking keep new best everyone ya tho
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
# Where one sentence ends and the next begins: after . ! ? before a capital, a digit or a quote; or a line break.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def stem(word: str) -> str:
    """A light suffix stripper: enough to join run/runs/running, not more."""
    if len(word) <= 3 or not word.isascii():
        return word
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)] + keep
            if suffix in ("ing", "ed") and len(base) > 3 and base[-1] == base[-2]:
                base = base[:-1]  # running -> run, planned -> plan
            if suffix == "s" and word.endswith("ss"):
                return word
            return base
    return word


# "Caroline: ..." or "Dr. Ada Lee: ..." in a transcript names the speaker, not
# the subject; a label is one to three capitalised words.
_SPEAKER = re.compile(r"^\s*[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}:\s+")
# Labels people head a note with ("TODO: renew the insurance", "Idea: ..."):
# they say what kind of note it is, never who is speaking.
NOTE_LABELS = frozenset(
    """
    todo to-do note notes nb ps fyi idea ideas reminder remember update question answer decision decided
    action task tip warning important done next status goal plan summary edit bug fix issue context result
    thought quote link ref re agenda followup follow-up later tomorrow today tonight
    """.split()
)


def split_label(text: str) -> tuple[str, str]:
    """``(label, body)``: the label heading ``text`` as written ("Caroline: ",
    "TODO: "; "" when it has none) and what follows it."""
    match = _SPEAKER.match(text)
    return (match.group(0), text[match.end() :]) if match else ("", text)


def unlabelled(text: str) -> str:
    """``text`` without the label heading it: what the turn or note says."""
    return split_label(text)[1]


def speaker(text: str) -> str | None:
    """The speaker of a transcript's turn ("Melanie: ..." -> "Melanie"); None
    for a note, labelled ("TODO: ...") or not."""
    match = _SPEAKER.match(text)
    if match is None:
        return None
    name = match.group(0).strip().rstrip(":").strip()
    return None if name.lower() in NOTE_LABELS else name


def speakers(texts: Iterable[str]) -> frozenset[str]:
    """Names in speaker labels: the participants of a transcript, who are
    everywhere in it and so say nothing about what a turn is about."""
    names: set[str] = set()
    for text in texts:
        for line in text.splitlines():
            match = _SPEAKER.match(line)
            if match:
                names.update(w.lower() for w in _WORD.findall(match.group(0)))
    return frozenset(names)


@lru_cache(maxsize=1 << 16)
def _word_terms(raw: str) -> tuple[str, tuple[str, ...]]:
    """A lowercased word as found (``don't``) -> (the word, the terms it gives)."""
    word = raw.split("'")[0]
    if _CJK.search(word):
        return word, tuple(ch for ch in word if _CJK.match(ch))
    if word in STOPWORDS or len(word) < 2 or (word.isdigit() and len(word) < 4):
        return word, ()
    return word, (stem(word),)


def term_pairs(text: str) -> list[tuple[str, str]]:
    """Each content term of ``text`` with the word it came from, speakers'
    names included: ``terms(text, ignore)`` is the terms of the pairs whose
    word is not in ``ignore``. Derived statistics keep these pairs, so a
    topic's terms under any set of speaker names need no second reading."""
    out: list[tuple[str, str]] = []
    for raw in _WORD.findall(unlabelled(text).lower()):
        word, found = _word_terms(raw)
        out.extend((word, term) for term in found)
    return out


def terms(text: str, ignore: frozenset[str] = frozenset(), *, label: bool = False) -> list[str]:
    """Content terms: lowercased, stopwords out, stemmed; CJK as characters.
    A label heading the text ("Dana: ...", "Dentist: ...") is left out: it
    names who speaks; with ``label`` its words count (what a search finds)."""
    out: list[str] = []
    for raw in _WORD.findall((text if label else unlabelled(text)).lower()):
        word, found = _word_terms(raw)
        if found and word not in ignore:
            out.extend(found)
    return out


def vocabulary(texts: list[str]) -> list[list[str]]:
    """Terms of each text, leaving out the names of the transcript's speakers."""
    ignore = speakers(texts)
    return [terms(text, ignore) for text in texts]


Vector = dict[str, float]


class Weights:
    """Inverse document frequencies over a collection of texts.

    A term found in a large share of the texts (a speaker's name on every
    turn, the owner's name in every note) says nothing about what a text is
    about, so it weighs nothing once the collection is big enough to tell.
    """

    COMMON_SHARE = 0.5
    MIN_TEXTS = 8

    def __init__(self, documents: Iterable[list[str]]) -> None:
        counts: Counter[str] = Counter()
        total = 0
        for doc in documents:
            counts.update(set(doc))
            total += 1
        self._count(counts, total)

    @classmethod
    def of(cls, frequencies: Mapping[str, int], total: int) -> Weights:
        """Weights from document frequencies counted elsewhere (``total``
        texts): the same as counting them here, for the terms given."""
        weights = cls.__new__(cls)
        weights._count(Counter(frequencies), total)
        return weights

    def _count(self, counts: Counter[str], total: int) -> None:
        self.total = max(total, 1)
        self.df = counts
        self.common = (
            {t for t, c in counts.items() if c / self.total >= self.COMMON_SHARE} if total >= self.MIN_TEXTS else set()
        )

    def idf(self, term: str) -> float:
        if term in self.common:
            return 0.0
        return math.log(1 + self.total / (self.df.get(term, 0) or 1))

    def vector(self, words: list[str]) -> Vector:
        tf = Counter(words)
        vec = {t: (1 + math.log(c)) * self.idf(t) for t, c in tf.items() if t not in self.common}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {t: v / norm for t, v in vec.items()}


def cosine(a: Vector, b: Vector) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(t, 0.0) for t, v in a.items())


def add_into(total: Vector, vec: Vector) -> None:
    for t, v in vec.items():
        total[t] = total.get(t, 0.0) + v


def normalised(vec: Vector) -> Vector:
    norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return {t: v / norm for t, v in vec.items()}


@lru_cache(maxsize=8192)  # pure, and asked of the same titles again and again (every section, every block)
def slugify(text: str, max_length: int = 48) -> str:
    """A readable slug that is a safe file name on Windows, macOS and Linux;
    empty when nothing usable is left.

    Latin letters are folded to ASCII (``Café`` -> ``cafe``); letters of other
    scripts are kept as they are (``東京の天気`` stays, NFC), so a topic in
    Japanese is not called ``notes``. Secrets never reach a file name (the
    text is redacted first), and names Windows reserves (``aux``, ``nul``,
    ``con``, ``com1``...) get a suffix.
    """
    from memd.core.layout import WINDOWS_RESERVED
    from memd.core.redact import MARK, redact

    clean = MARK.sub(" ", redact(unicodedata.normalize("NFC", text)).text)
    chars: list[str] = []
    for ch in clean:
        folded = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode()
        if folded:
            chars.append(folded.lower())
        elif ch.isalnum():
            chars.append(ch.lower())
        else:
            chars.append(" ")
    words = re.findall(r"[^\W_]+", "".join(chars))
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_length:
            if not slug:
                slug = word[:max_length]  # one long word (a CJK phrase has no spaces): cut it
            break
        slug = candidate
    slug = unicodedata.normalize("NFC", slug)
    if slug in WINDOWS_RESERVED:
        slug = f"{slug}-1"
    return slug


def normal_form(text: str) -> str:
    """Text reduced for duplicate detection: case, spacing and punctuation."""
    return " ".join(_WORD.findall(text.lower()))
