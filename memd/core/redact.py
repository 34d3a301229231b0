"""Secret redaction: what looks like a credential never reaches the vault.

Every entry memd appends and every source copy it keeps passes through
``redact`` first; ``memd lint`` runs ``find_secrets`` over the vault to flag
anything that slipped in by hand. A match is replaced by ``[REDACTED:kind]``
(for assignments and bearer tokens only the value is replaced, so the text
still says *what* was there). The rules, and what each matches, are in
``secret_rules.py``.

Redaction is idempotent: ``[REDACTED:kind]`` never matches a rule again. Every
rule runs in time linear in the text (no pattern can backtrack over a long
line), because memd redacts whole imported files. ``redact_all`` redacts a
batch of entries as one text, so a PEM key given one line per entry is
removed as a whole, not left as loose body lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memd.core.detectors import MARKERS, PLACEHOLDER, library_spans
from memd.core.secret_rules import RULES, Rule, Span

MARK = re.compile(r"\[REDACTED:[a-z-]+\]")  # what a redacted secret leaves: no word of anything it names


@dataclass(frozen=True)
class Finding:
    """A secret found in a text: its kind and where it was (character offsets)."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Redaction:
    """A text with its secrets replaced, and what was found."""

    text: str
    findings: tuple[Finding, ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted({f.kind for f in self.findings}))


def _spans(rule: Rule, text: str, lower: str | None = None) -> list[tuple[int, int]]:
    if rule.triggers:
        folded = lower if lower is not None else text.lower()
        if not any(trigger in folded for trigger in rule.triggers):
            return []
    spans: list[Span] = []
    pos = 0
    while pos <= len(text):
        match = rule.pattern.search(text, pos)
        if match is None:
            break
        # Search on past the secret: a refined span may reach beyond the match.
        pos = max(match.end(), match.start() + 1)
        found = rule.refine(match, text) if rule.refine else match.span(rule.group)
        if found is None:
            continue
        start, end = found
        pos = max(pos, end)
        value = text[start:end]
        core = value.strip("\"'")
        # Only a value that is a marker is one already redacted: a passphrase runs to the
        # end of its line, which may hold a secret an earlier rule replaced ("password:
        # correct horse [REDACTED:aws-access-key] staple"), and all of it goes.
        if start < 0 or PLACEHOLDER.match(core) or core.startswith(MARKERS) or _small_number(core):
            continue
        if value[:1] in "\"'" and value[-1:] == value[:1]:
            start, end = start + 1, end - 1  # keep the quotes: the text stays valid JSON/YAML
        spans.append((start, end))
    return spans


def _small_number(value: str) -> bool:
    # ``max_tokens: 4096`` is a setting, not a secret.
    return value.isdigit() and len(value) < 8


def redact(text: str, *, keep_lines: bool = False) -> Redaction:
    """``text`` with every secret replaced by ``[REDACTED:kind]``; with
    ``keep_lines`` a secret spanning lines leaves its line breaks behind, so
    every other line keeps its number (for what is cited as ``path:line``)."""
    text, findings = _own_rules(text, keep_lines=keep_lines)
    library = library_spans(text)
    if library:
        pieces, last = [], 0
        for start, end, kind in library:
            tail = "\n" * text.count("\n", start, end) if keep_lines else ""
            pieces += [text[last:start], f"[REDACTED:{kind}]{tail}"]
            findings.append(Finding(kind, start, end))
            last = end
        text = "".join([*pieces, text[last:]])
    return Redaction(text, tuple(findings))


# Entries (a line starting "- <seq=" and what follows up to the next) found in a text
# that held no secret, in this process: a consolidation of a long import reads the same
# buffer, less what it filed, and commits the same topics, more what it added, round
# after round, and reads each entry once this way. Kept up to _CLEAN_MOST, then begun anew.
_CLEAN: set[str] = set()
_CLEAN_MOST = 500_000


def redact_entries(text: str, *, keep_lines: bool = False) -> Redaction:
    """``redact`` for a file of entries (CURRENT.md, a topic): a text whose every
    entry was in a text found clean before is clean (a secret never runs from
    one entry into the next: each starts a line of its own), so it is not read again."""
    from memd.core.entry import ENTRY_START

    pieces = ENTRY_START.split(text)
    if len(pieces) < 2:
        return redact(text, keep_lines=keep_lines)
    unread = [piece for piece in pieces if piece not in _CLEAN]
    if not unread:
        return Redaction(text, ())
    # Only the entries not read before are read (a topic that gained a few entries is
    # not read whole again); the whole text only when they hold a secret, so that
    # each one's place in it is found.
    if len(unread) < len(pieces) and not find_secrets("\n".join(unread)):
        found = Redaction(text, ())
    else:
        found = redact(text, keep_lines=keep_lines)
    if not found.findings:
        if len(_CLEAN) + len(unread) > _CLEAN_MOST:
            _CLEAN.clear()
        _CLEAN.update(unread)
    return found


def _own_rules(text: str, *, keep_lines: bool) -> tuple[str, list[Finding]]:
    findings: list[Finding] = []
    lower: str | None = text.lower()
    for rule in RULES:
        spans = _spans(rule, text, lower)
        if not spans:
            continue
        lower = None  # the text changes: lowercase it again when next needed
        pieces, last = [], 0
        for start, end in spans:
            tail = "\n" * text.count("\n", start, end) if keep_lines else ""
            pieces += [text[last:start], f"[REDACTED:{rule.kind}]{tail}"]
            findings.append(Finding(rule.kind, start, end))
            last = end
        text = "".join([*pieces, text[last:]])
    return text, findings


def redact_value(value: str, key: str | None = None) -> str:
    """One value (a signature field, a title, a file name) without its secrets;
    with ``key``, read as ``key: value`` (``password=hunter22`` is a secret
    although ``hunter22`` alone is not)."""
    if key is not None:
        lead = f"{key}: "
        result = redact(lead + value).text
        if result.startswith(lead):
            return result[len(lead) :]
    return redact(value).text


def redact_data(data: Any) -> Any:
    """JSON-like ``data`` (dicts, lists, strings) with every string redacted, each
    value read with its key (``"client_secret": "..."`` says what the value is).
    Strings keep their lines (a result cites ``path:line``)."""
    if isinstance(data, str):
        return redact(data, keep_lines=True).text
    if isinstance(data, list):
        return [redact_data(item) for item in data]
    if isinstance(data, tuple):
        return tuple(redact_data(item) for item in data)
    if isinstance(data, dict):
        return {key: _with_key(key, value) for key, value in data.items()}
    return data


def _with_key(key: object, value: Any) -> Any:
    if not isinstance(value, str) or not isinstance(key, str):
        return redact_data(value)
    said = f"{key}: "
    scrubbed = redact(said + value, keep_lines=True)
    if scrubbed.findings and scrubbed.text.startswith(said):
        return scrubbed.text[len(said) :]
    return redact(value, keep_lines=True).text


def redact_all(texts: Sequence[str]) -> list[Redaction]:
    """Redact texts that belong together (the lines of one ``memd add``).

    A private key split over several texts is found in their concatenation
    and removed as a whole: the text holding its BEGIN line keeps the
    ``[REDACTED:private-key]`` marker, the texts holding the rest lose those
    lines (and come back empty when that was all they held). Every other rule
    runs on each text alone.
    """
    joined = "\n".join(texts)
    keys = [(m.start(), m.end()) for m in RULES[0].pattern.finditer(joined)]
    if not keys:
        return [redact(text) for text in texts]
    results: list[Redaction] = []
    offset = 0
    for text in texts:
        first, last = offset, offset + len(text)
        offset = last + 1
        kept: list[str] = []
        cut: list[Finding] = []
        cursor = first
        for start, end in keys:
            if end <= first or start >= last:
                continue
            kept.append(joined[cursor : max(start, first)])
            if start >= first:
                kept.append("[REDACTED:private-key]")
            cut.append(Finding("private-key", max(start, first) - first, min(end, last) - first))
            cursor = min(end, last)
        kept.append(joined[cursor:last])
        rest = redact("".join(kept))
        results.append(Redaction(rest.text, (*cut, *rest.findings)))
    return results


def find_secrets(text: str) -> list[tuple[int, str]]:
    """(1-based line, kind) of every secret still in ``text``."""
    found: list[tuple[int, str]] = []
    lower = text.lower()
    for rule in RULES:
        for start, _ in _spans(rule, text, lower):
            found.append((text.count("\n", 0, start) + 1, rule.kind))
    # What the maintained rule set finds beyond memd's own rules: looked for in what
    # those leave (their line breaks kept), so one key is not reported twice.
    rest = _own_rules(text, keep_lines=True)[0] if found else text
    for start, _, kind in library_spans(rest):
        found.append((rest.count("\n", 0, start) + 1, kind))
    return sorted(set(found))
