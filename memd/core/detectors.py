"""What detect-secrets and a high-entropy check find in a text, after memd's own
rules (``redact.py``): the library's detectors, each run only on the lines that
could hold its kind of secret, and random-looking runs of key characters.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

Span = tuple[int, int]

# A marker as a link writes it too: memd links an entry's src, and a URL's brackets are
# %-encoded ("https://bob:%5BREDACTED:url-password%5D@host" is already redacted).
MARKERS = ("[REDACTED:", "%5BREDACTED:", "%5bREDACTED:")
# A value that stands where a secret would (``***``, ``<token>``, ``${VAR}``): no secret.
PLACEHOLDER = re.compile(
    r"^(?:\[REDACTED:[a-z-]+\]|\*+|x+|X+|\.{3,}|<.*|\{\{.*|\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*|%[A-Za-z_]+%)$"
)

# After memd's own rules, every text passes detect-secrets' regex detectors and a
# high-entropy check. The library is imported only when a text holds something one
# of its detectors could match (its triggers, below): importing it costs ~100 ms
# (it pulls in requests), which a plain `memd add` of prose never pays. Its patterns
# run one line at a time, and a long line in overlapping windows, so a pattern that
# could backtrack costs at most a window's square per window: linear in the text.

_WINDOW = 4096
_OVERLAP = 512  # longer than any key a detector finds, so each lies whole in one window


@dataclass(frozen=True)
class _Plugin:
    """One detect-secrets detector: its module and class, memd's name for its kind, the
    lowercase triggers one of which a line must hold (none: the whole text is read),
    which group of each of its patterns holds the secret, and a cheap pattern of the
    shape it finds, which a line (or the text) must match before the library is
    imported and its patterns run."""

    module: str
    name: str
    kind: str
    triggers: tuple[str, ...] = ()
    groups: tuple[tuple[int, int], ...] = ()  # (pattern index, group); group 0 otherwise
    prefilter: str | None = None  # a cheap pattern a line must match too


# Left out: Artifactory (``AP`` + 9 letters or digits flags upper-case words), IBM,
# Cloudant and SoftLayer (a keyword near any 40-character word), and public IP
# addresses (not a secret).
_PLUGINS: tuple[_Plugin, ...] = (
    _Plugin(
        "aws",
        "AWSKeyDetector",
        "aws-access-key",
        ("a3t", "abia", "acca", "akia", "asia", "aws"),
        ((1, 1),),
        r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}|(?i:aws)[^\n]{0,20}?['\"][0-9a-zA-Z/+]{40}['\"]",
    ),
    _Plugin("azure_storage_key", "AzureStorageKeyDetector", "azure-storage-key", ("accountkey=",)),
    _Plugin("basic_auth", "BasicAuthDetector", "url-password", ("://",), ((0, 1),), r"://[^\s:/@]+:[^\s@]+@"),
    _Plugin("discord", "DiscordBotTokenDetector", "discord-token", prefilter=r"[MNO][a-zA-Z\d_-]{23,25}\."),
    _Plugin("github_token", "GitHubTokenDetector", "github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _Plugin(
        "gitlab_token",
        "GitLabTokenDetector",
        "gitlab-token",
        (
            "glpat-",
            "gldt-",
            "glft-",
            "glsoat-",
            "glrt-",
            "gr1348941",
            "glcbt-",
            "glimt-",
            "glptt-",
            "glagent-",
            "gloas-",
        ),
    ),
    _Plugin("jwt", "JwtTokenDetector", "jwt", ("eyj",), prefilter=r"eyJ[A-Za-z0-9_=-]+\."),
    _Plugin("mailchimp", "MailchimpDetector", "mailchimp-key", ("-us",), prefilter=r"[0-9a-z]{32}-us[0-9]"),
    _Plugin("npm", "NpmDetector", "npm-token", ("_authtoken",), ((0, 1),)),
    _Plugin("openai", "OpenAIDetector", "openai-key", ("t3blbkfj",)),
    _Plugin(
        "private_key",
        "PrivateKeyDetector",
        "private-key",
        ("private key", "putty-user-key"),
        prefilter=r"BEGIN [A-Z0-9 ]*PRIVATE KEY|PuTTY-User-Key-File",
    ),
    _Plugin("pypi_token", "PypiTokenDetector", "pypi-token", ("pypi-",)),
    _Plugin("sendgrid", "SendGridDetector", "sendgrid-key", ("sg.",), prefilter=r"SG\.[a-zA-Z0-9_-]{22}\."),
    _Plugin("slack", "SlackDetector", "slack-token", ("xox", "hooks.slack.com")),
    _Plugin("square_oauth", "SquareOAuthDetector", "square-key", ("sq0csp-",)),
    _Plugin("stripe", "StripeDetector", "stripe-key", ("k_live_",)),
    _Plugin("telegram_token", "TelegramBotTokenDetector", "telegram-token", prefilter=r"\d{8,10}:[0-9A-Za-z_-]{35}"),
    _Plugin("twilio", "TwilioKeyDetector", "twilio-key", prefilter=r"(?:AC|SK)[a-z0-9]{32}"),
    # Its quotes-required patterns (``secret = "..."``), as for a file of no known type.
    _Plugin(
        "keyword",
        "KeywordDetector",
        "credential",
        ("key", "pass", "pwd", "secret", "contrase"),
        prefilter=r"""(?i)(?:key|pass|pwd|secret|contrase)[\w\]'"]{0,40}\s*(?::|=|\(|!=)\s*@?["'`]|["'`]\s*[!=]=""",
    ),
)


@dataclass(frozen=True)
class _Detector:
    kind: str
    patterns: tuple[tuple[re.Pattern[str], int], ...]  # a pattern and the group holding the secret
    valid: Callable[[str], bool] | None = None  # the detector's own check of what a pattern found


def _detector(plugin: _Plugin) -> _Detector:
    import importlib

    cls = getattr(importlib.import_module(f"detect_secrets.plugins.{plugin.module}"), plugin.name)
    if plugin.module == "keyword":
        table = importlib.import_module("detect_secrets.plugins.keyword").QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
        return _Detector(plugin.kind, tuple(table.items()))
    groups = dict(plugin.groups)
    patterns = tuple((pattern, groups.get(i, 0)) for i, pattern in enumerate(cls.denylist))
    return _Detector(plugin.kind, patterns, getattr(cls, "is_formally_valid", None))


_DETECTORS: dict[str, _Detector] = {}
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_PREFILTERS: dict[str, re.Pattern[str]] = {}


def _lines_with(text: str, lower: str, triggers: tuple[str, ...]) -> list[Span]:
    """The lines of ``text`` holding one of ``triggers``, each as (start, end)."""
    found: dict[int, int] = {}

    def add(at: int) -> int:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        found[start] = len(text) if end < 0 else end
        return found[start]

    for trigger in triggers:
        pos = lower.find(trigger)
        while pos >= 0:
            pos = lower.find(trigger, add(pos))
    return sorted(found.items())


def _windows(text: str, start: int, end: int) -> list[Span]:
    if end - start <= _WINDOW:
        return [(start, end)]
    step = _WINDOW - _OVERLAP
    return [(s, min(s + _WINDOW, end)) for s in range(start, max(end - _OVERLAP, start + 1), step)]


def library_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of what detect-secrets and the entropy check find in ``text``."""
    lower = text.lower()
    if len(lower) != len(text):  # a letter whose lowercase is longer: look at every line
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    found: list[tuple[int, int, str]] = []
    for plugin in _PLUGINS:
        if plugin.triggers and not any(trigger in lower for trigger in plugin.triggers):
            continue
        # A detector with no literal prefix has only bounded repeats: it reads the whole text.
        lines = _lines_with(text, lower, plugin.triggers) if plugin.triggers else [(0, len(text))]
        if plugin.prefilter:
            check = _PREFILTERS.get(plugin.name) or _PREFILTERS.setdefault(plugin.name, re.compile(plugin.prefilter))
            lines = [(s, e) for s, e in lines if check.search(text, s, e)]
        if not lines:
            continue
        detector = _DETECTORS.get(plugin.name) or _DETECTORS.setdefault(plugin.name, _detector(plugin))
        for line_start, line_end in lines:
            for start, end in _windows(text, line_start, line_end) if plugin.triggers else [(line_start, line_end)]:
                piece = text[start:end]
                for pattern, group in detector.patterns:
                    for match in pattern.finditer(piece):
                        if group > (pattern.groups or 0) or match.start(group) < 0:
                            continue
                        if detector.valid is not None and not detector.valid(match.group(0)):
                            continue
                        value = match.group(group).strip("\"'`")
                        if not value or PLACEHOLDER.match(value) or value.startswith(MARKERS):
                            continue
                        if detector.kind == "credential" and _ENV_NAME.match(value):
                            continue  # ``api_key_env = "OPENAI_API_KEY"`` names where the key is
                        begin = start + match.start(group) + match.group(group).find(value)
                        found.append((begin, begin + len(value), detector.kind))
    found += _entropy_spans(text)
    return _disjoint(found)


# --- high entropy: a random-looking run of key characters -------------------------
#
# detect-secrets' base64 check looks only inside quotes; a memory is prose, where a
# key is pasted bare. A run counts when it is 24 to 256 characters long, holds
# upper-case letters, lower-case letters and digits, changes between them on at least
# 40% of its letters and digits (a random string does at ~62%, an identifier like ``TopicIndex2024`` or
# a path rarely), and its entropy (the library's Shannon measure over the base64
# alphabet) reaches what a random string of its length reaches: a hash (lower-case
# hex), a seq, a date, a path, a word or a UUID never does.
_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{24,256}(?![A-Za-z0-9+/=_-])")


_DIGIT = re.compile(r"[0-9]")


def _entropy_spans(text: str) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    measure: Callable[[str], float] | None = None
    for match in _RUN.finditer(text):
        run = match.group(0)
        if not _mixed(run):
            continue
        if measure is None:
            from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

            measure = Base64HighEntropyString().calculate_shannon_entropy
        if measure(run) >= min(4.5, math.log2(len(run)) * 0.85):
            found.append((match.start(), match.end(), "high-entropy"))
    return found


def _mixed(run: str) -> bool:
    """Upper, lower and digits, changing class on at least 40% of its letters and digits."""
    if run.islower() or run.isupper() or not _DIGIT.search(run):  # most runs: one glance
        return False
    kinds = [0 if c.isdigit() else 1 if c.isupper() else 2 for c in run if c.isalnum()]
    if not {0, 1, 2} <= set(kinds):
        return False
    changes = sum(1 for a, b in itertools.pairwise(kinds) if a != b)
    return changes >= 0.4 * (len(kinds) - 1)


def _disjoint(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Spans sorted, overlapping ones joined (the kind of the first to start; on a tie,
    a detector's before the entropy check's)."""
    out: list[tuple[int, int, str]] = []
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], i))
    for start, end, kind in (spans[i] for i in order):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]), out[-1][2])
        else:
            out.append((start, end, kind))
    return out
