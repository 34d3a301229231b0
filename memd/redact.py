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
credential         the value in ``password=...``, ``secret: ...``, ``token = ...``,
                   ``api_key: ...``, ``"client_secret": "..."`` and similar
                   (key names: password, passwd, pwd, passphrase, secret,
                   token, api key, access key, secret key, private key,
                   client secret, auth token; the value must be 4+ characters
                   and not a placeholder like ``***``, ``<...>`` or ``${VAR}``)
=================  ===========================================================

Redaction is idempotent: ``[REDACTED:kind]`` never matches a rule again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ASSIGNMENT_KEYS = (
    r"(?:[A-Za-z0-9]+[_.-])*"  # prefixes like db_, AWS_, mysql.
    r"(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key"
    r"|private[_-]?key|client[_-]?secret|auth[_-]?token|access[_-]?token|refresh[_-]?token)"
)
_PLACEHOLDER = re.compile(
    r"^(?:\[REDACTED:[a-z-]+\]|\*+|x+|X+|\.{3,}|<.*|\{\{.*|\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*|%[A-Za-z_]+%)$"
)


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int | str = 0  # which group holds the secret (0: the whole match)


RULES: tuple[Rule, ...] = (
    Rule(
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
            r"(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    Rule("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    Rule("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    Rule("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})")),
    Rule("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    Rule(
        "slack-token",
        re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
    ),
    Rule("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    Rule("stripe-key", re.compile(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}")),
    Rule("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    Rule("bearer-token", re.compile(r"\b[Bb]earer\s+([A-Za-z0-9._~+/-]{20,}=*)"), 1),
    Rule("url-password", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:([^\s@/]{3,})@"), 1),
    Rule(
        "credential",
        re.compile(
            rf"""(?ix)\b{_ASSIGNMENT_KEYS}["']?\s*(?:=|:|:=|=>)\s*
            (?P<value>"[^"\n]{{4,}}"|'[^'\n]{{4,}}'|[^\s"',;]{{4,}})"""
        ),
        "value",
    ),
)


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Redaction:
    text: str
    findings: tuple[Finding, ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted({f.kind for f in self.findings}))


def _spans(rule: Rule, text: str) -> list[tuple[int, int]]:
    spans = []
    for match in rule.pattern.finditer(text):
        start, end = match.span(rule.group)
        value = text[start:end]
        core = value.strip("\"'")
        if start < 0 or _PLACEHOLDER.match(core) or "[REDACTED:" in value or _small_number(core):
            continue
        if value[:1] in "\"'" and value[-1:] == value[:1]:
            start, end = start + 1, end - 1  # keep the quotes: the text stays valid JSON/YAML
        spans.append((start, end))
    return spans


def _small_number(value: str) -> bool:
    # ``max_tokens: 4096`` is a setting, not a secret.
    return value.isdigit() and len(value) < 8


def redact(text: str) -> Redaction:
    """``text`` with every secret replaced by ``[REDACTED:kind]``."""
    findings: list[Finding] = []
    for rule in RULES:
        spans = _spans(rule, text)
        if not spans:
            continue
        pieces, last = [], 0
        for start, end in spans:
            pieces += [text[last:start], f"[REDACTED:{rule.kind}]"]
            findings.append(Finding(rule.kind, start, end))
            last = end
        text = "".join([*pieces, text[last:]])
    return Redaction(text, tuple(findings))


def find_secrets(text: str) -> list[tuple[int, str]]:
    """(1-based line, kind) of every secret still in ``text``."""
    found: list[tuple[int, str]] = []
    for rule in RULES:
        for start, _ in _spans(rule, text):
            found.append((text.count("\n", 0, start) + 1, rule.kind))
    return sorted(set(found))

