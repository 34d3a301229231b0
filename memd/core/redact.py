"""Secret redaction: what looks like a credential never reaches the vault.

Every entry memd appends and every source copy it keeps passes through
``redact`` first; ``memd lint`` runs ``find_secrets`` over the vault to flag
anything that slipped in by hand. A match is replaced by ``[REDACTED:kind]``
(for assignments and bearer tokens only the value is replaced, so the text
still says *what* was there). The rules, in the order they are applied:

=================  ===========================================================
kind               what it matches
=================  ===========================================================
private-key        a PEM block ``-----BEGIN ... PRIVATE KEY-----`` to its END line
anthropic-key      ``sk-ant-`` followed by 20+ key characters
openai-key         ``sk-`` / ``sk-proj-`` / ``sk-svcacct-`` + 20+ key characters
github-token       ``ghp_ gho_ ghu_ ghs_ ghr_`` + 36 characters, ``github_pat_...``
aws-access-key     ``AKIA`` / ``ASIA`` + 16 upper-case letters or digits
slack-token        ``xoxb- xoxp- xoxa- xoxr- xoxs-`` tokens, Slack webhook URLs
google-api-key     ``AIza`` + 35 characters
stripe-key         ``sk_live_ sk_test_ rk_live_ rk_test_`` + 16+ characters
jwt                three base64url parts, the first two starting ``eyJ``
bearer-token       the value after ``Bearer `` (20+ token characters)
url-password       the password in ``scheme://user:password@host``
aws-secret-key     40 base64 characters within a few words after ``aws`` or ``secret``
credential         the value in ``password=...``, ``secret: ...``, ``token = ...``,
                   ``api_key: ...``, ``"client_secret": "..."`` and similar
                   (key names: password, passwd, pwd, passphrase, secret,
                   token, api key, access key, secret key, private key,
                   client secret, auth token; the value must be 4+ characters
                   and not a placeholder like ``***``, ``<...>`` or ``${VAR}``).
                   For password and passphrase keys an unquoted value runs to
                   the end of the line (``password: correct horse battery
                   staple``). Prose counts too: "my password is ...", "the AWS
                   secret is ..." (for secret/token/key only when the value
                   looks like one: "the secret is that ..." stays)
=================  ===========================================================

memd's rules also find Hugging Face (``hf_``) and npm (``npm_``) tokens and Azure
``AccountKey=`` values. After them every text passes detect-secrets' detectors (AWS,
GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, npm, OpenAI, PyPI, Square, Discord,
Telegram, Mailchimp, private keys, JWTs, Azure storage keys, basic auth, quoted
keyword assignments) and a high-entropy check for random-looking runs of key
characters (``high-entropy``); see ``detectors.py``. A key counts wherever it
starts after a character that is not a letter or digit (``token_ghp_...``).

Redaction is idempotent: ``[REDACTED:kind]`` never matches a rule again. Every
rule runs in time linear in the text (no pattern can backtrack over a long
line), because memd redacts whole imported files. ``redact_all`` redacts a
batch of entries as one text, so a PEM key given one line per entry is
removed as a whole, not left as loose body lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from memd.core.detectors import MARKERS, PLACEHOLDER, library_spans

_ASSIGNMENT_KEYS = (
    # Prefixes like db_, AWS_, mysql.; the look-behind makes a match start only
    # where a chain of them starts (a.a.a.a... would otherwise be quadratic).
    r"(?<![A-Za-z0-9_.-])(?:[A-Za-z0-9]+[_.-])*"
    r"(?P<key>password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key"
    r"|private[_-]?key|client[_-]?secret|auth[_-]?token|access[_-]?token|refresh[_-]?token)"
)
# Keys whose value may be several words (a passphrase).
_PHRASE_KEY = re.compile(r"(?i)^(?:password|passwd|pwd|passphrase|passcode)$")
# "my password is ...", "the password for the router is: ...", "pwd for server: ...":
# the key, perhaps what it is for (a few words after for/of/to/on/at), a verb or a
# colon, the value. Said with no "my"/"the" before it, the value must look like a
# secret ("Password is required" stays; see ``_prose_span``).
_PROSE = r"""(?ix)(?:\b(?P<owner>my|the|our|your|his|her|their|this|that|its|a|an)\s+(?:[a-z0-9_-]{1,30}\s+){0,3}?)?
    \b(?P<key>password|passphrase|passcode|passwd|pwd|pass|secret(?:\s+access)?(?:\s+key)?|token|api\s*key
    |access\s+key|private\s+key)\b
    (?:\s+(?:for|of|to|on|at)(?:\s+[\w.@-]{1,40}){1,4}?)?
    (?:\s+(?:is|was|is\s+now|will\s+be|reads)(?:\s*:)?|\s*[=:])\s+(?P<value>[^\s"'`]{4,})"""
MARK = re.compile(r"\[REDACTED:[a-z-]+\]")  # what a redacted secret leaves: no word of anything it names


Span = tuple[int, int]
# Where a key may start: after anything but a letter or digit. ``\b`` would miss one
# embedded after ``_`` (``token_ghp_...``, ``export_AKIA....md``), ``_`` being a word
# character to it.
_START = r"(?<![A-Za-z0-9])"


@dataclass(frozen=True)
class Rule:
    """One kind of secret and the pattern that finds it."""

    kind: str
    # The regular expression, compiled when a text first holds one of its
    # triggers: most texts hold none, and compiling them all would cost every
    # `memd add` several milliseconds.
    source: str
    group: int | str = 0  # which group holds the secret (0: the whole match)
    # Where the secret really is, given the match and the text (None: not one).
    refine: Callable[[re.Match[str], str], Span | None] | None = None
    # Substrings one of which every match contains (lowercase: looked for in
    # the lowercased text): a text without any is not searched at all, which
    # keeps a 20 MB import from paying for fourteen full regex scans.
    triggers: tuple[str, ...] = ()

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source)


_CLAUSE = re.compile(r"[^.;,!?\n]*")
_WORDS_TO_EOL = re.compile(r"(?:[ \t]+[^\s\"',;]+)*")


def _looks_secret(token: str) -> bool:
    """A password-ish token: letters with digits or symbols, or mixed case inside."""
    core = token.strip(".,;:!?)(")
    if len(core) < 6:
        return False
    letters = any(c.isalpha() for c in core)
    others = any(c.isdigit() or not c.isalnum() for c in core)
    mixed = any(c.isupper() for c in core[1:]) and any(c.islower() for c in core)
    return letters and (others or mixed)


def _phrase_span(match: re.Match[str], text: str) -> Span | None:
    """``password: correct horse battery staple``: an unquoted passphrase runs to
    the end of the line (for password keys only; ``token=abc user=x`` stops)."""
    start, end = match.span("value")
    value = text[start:end]
    if value[:1] in "\"'" or not _PHRASE_KEY.match(match.group("key")):
        return start, end
    return start, _WORDS_TO_EOL.match(text, end).end()  # type: ignore[union-attr]


def _prose_span(match: re.Match[str], text: str) -> Span | None:
    """ "my password is Tr0ub4dor&3zz", "the AWS secret is wJalr...": the value
    after the verb. A password that is plain words ("my password is correct
    horse battery staple") runs to the end of the clause; for a secret, token or
    key the value must look like one ("the secret is that she knew" stays)."""
    start, end = match.span("value")
    token = text[start:end].rstrip(".,;:!?")
    end = start + len(token)
    if _looks_secret(token):
        return start, end
    if not _PHRASE_KEY.match(match.group("key")) or match.group("owner") is None:
        return None
    clause = _CLAUSE.match(text, end)
    return start, end + len(clause.group(0).rstrip()) if clause else end


RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        r"(?s)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
        r"(?: BLOCK)?-----|\Z)",
        triggers=("private key",),
    ),
    Rule("anthropic-key", rf"{_START}sk-ant-[A-Za-z0-9_-]{{20,}}", triggers=("sk-ant-",)),
    Rule("openai-key", rf"{_START}sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{{20,}}", triggers=("sk-",)),
    Rule(
        "github-token",
        rf"{_START}(?:gh[pousr]_[A-Za-z0-9]{{36,}}|github_pat_[A-Za-z0-9_]{{22,}})",
        triggers=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Rule("aws-access-key", rf"{_START}(?:AKIA|ASIA)[0-9A-Z]{{16}}(?![0-9A-Z])", triggers=("akia", "asia")),
    Rule(
        "slack-token",
        rf"{_START}xox[abprs]-[A-Za-z0-9-]{{10,}}|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{{20,}}",
        triggers=("xox", "hooks.slack.com"),
    ),
    # Kinds detect-secrets (below) lacks or finds only in one setting: Hugging Face tokens,
    # npm tokens outside an .npmrc line, and an Azure account key shorter than its exact
    # 88 characters (cut when pasted, or a SAS-style key).
    Rule("huggingface-token", rf"{_START}hf_[A-Za-z0-9]{{30,}}", triggers=("hf_",)),
    Rule("npm-token", rf"{_START}npm_[A-Za-z0-9]{{36,}}", triggers=("npm_",)),
    Rule("azure-storage-key", r"(?i)AccountKey=([A-Za-z0-9+/]{20,}=*)", 1, triggers=("accountkey=",)),
    Rule("google-api-key", rf"{_START}AIza[0-9A-Za-z_-]{{35}}", triggers=("aiza",)),
    Rule("stripe-key", rf"{_START}[rs]k_(?:live|test)_[0-9A-Za-z]{{16,}}", triggers=("k_live_", "k_test_")),
    Rule("jwt", rf"{_START}eyJ[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{8,}}", triggers=("eyj",)),
    Rule("bearer-token", r"\b[Bb]earer\s+([A-Za-z0-9._~+/-]{20,}=*)", 1, triggers=("earer",)),
    Rule(
        "url-password",
        r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+://[^\s:/@]++:([^\s@/]{3,})@",
        1,
        triggers=("://",),
    ),
    Rule(
        "aws-secret-key",
        r"(?i)(?:aws|secret)[^\n]{0,40}?(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        1,
        triggers=("aws", "secret"),
    ),
    Rule(
        "credential",
        rf"""(?ix){_ASSIGNMENT_KEYS}["']?\s*(?:=|:|:=|=>)\s*
        (?P<value>"[^"\n]{{4,}}"|'[^'\n]{{4,}}'|[^\s"',;]{{4,}})""",
        "value",
        _phrase_span,
        ("pass", "pwd", "secret", "token", "key"),
    ),
    Rule("credential", _PROSE, "value", _prose_span, ("pass", "pwd", "secret", "token", "key")),
)


# --- detect-secrets: the maintained rule set, behind the same API ---------------
#
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
