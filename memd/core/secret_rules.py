"""What memd counts as a secret: its own rules, each a kind and a pattern, applied
in order by ``redact.py`` before the maintained detectors (``detectors.py``).

The rules, in the order they are applied:

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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

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
