"""The one token counter every threshold uses.

memd must work offline, so it cannot use a model's tokenizer (tiktoken fetches
its tables at run time). The rule: every run of letters or digits counts as one
token, and every CJK character counts as 1/1.5 of a token (CJK scripts have no
spaces, and a model's tokenizer spends about 1.5 characters per token there).
Punctuation is free. English prose comes out close to a BPE tokenizer's count
(slightly under), which is what the default thresholds (5000 / 1000) assume.
"""

from __future__ import annotations

import re
from functools import cache

# CJK Unified Ideographs (+ extension A), Hiragana, Katakana, Hangul syllables.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(letters and digits in any script but CJK, one CJK character): compiled when first
    counted, since a Unicode class costs milliseconds to compile and a search counts nothing."""
    return re.compile(f"(?:(?![{_CJK}])[^\\W_])+"), re.compile(f"[{_CJK}]")


def count_tokens(text: str) -> int:
    """Count tokens in ``text`` with memd's offline rule (see module doc)."""
    word, cjk_char = _patterns()
    return len(word.findall(text)) + round(len(cjk_char.findall(text)) / 1.5)
