"""The Porter stemmer (M.F. Porter, 1980), implemented here so the request path needs no dependency.

Porter's original algorithm is small, deterministic and conflates exactly the families tool search
cares about (``create``/``creates``/``created``/``creating`` → ``creat``; ``directories`` →
``directori``, ``directory`` → ``directori``). Two fixes are taken from its successor Porter2
(Snowball English), because the original gets words that matter here wrong: its exception list
(``news`` is not the plural of ``new``, ``bias`` not of ``bia``) and its plural rule (a final ``s`` goes
only when a vowel comes before the letter preceding it: ``gas``, ``this``, ``bus`` stay; ``ties`` →
``tie``). Only plain ASCII lowercase words are stemmed; anything else (digits, non-Latin scripts) is
returned unchanged.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["stem"]

_ASCII_WORD = re.compile(r"[a-z]+")
_VOWELS = frozenset("aeiou")


def _is_consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        # 'y' is a consonant at the start or after a vowel, a vowel after a consonant.
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """m in [C](VC){m}[V]: the number of vowel-consonant sequences."""
    m = 0
    prev_vowel = False
    for i in range(len(stem)):
        cons = _is_consonant(stem, i)
        if cons and prev_vowel:
            m += 1
        prev_vowel = not cons
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1)


def _ends_cvc(word: str) -> bool:
    """*o: ends consonant-vowel-consonant where the last consonant is not w, x or y."""
    if len(word) < 3:
        return False
    n = len(word)
    return (
        _is_consonant(word, n - 3)
        and not _is_consonant(word, n - 2)
        and _is_consonant(word, n - 1)
        and word[-1] not in "wxy"
    )


# Porter2's exceptional forms: whole words stemmed specially or left alone.
_EXCEPTIONS = {
    "skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie", "idly": "idl",
    "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli", "singly": "singl",
    "sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos", "bias": "bias",
    "andes": "andes", "inning": "inning", "outing": "outing", "canning": "canning", "herring": "herring",
    "earring": "earring", "proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}  # fmt: skip


def _step1a(w: str) -> str:
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith(("ied", "ies")):
        return w[:-2] if len(w) > 4 else w[:-1]
    if w.endswith(("ss", "us")):
        return w
    if w.endswith("s") and any(c in _VOWELS or c == "y" for c in w[:-2]):
        return w[:-1]
    return w


def _step1b(w: str) -> str:
    if w.endswith("eed"):
        return w[:-1] if _measure(w[:-3]) > 0 else w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
            w = w[: -len(suffix)]
            if w.endswith(("at", "bl", "iz")):
                return w + "e"
            if _ends_double_consonant(w) and w[-1] not in "lsz":
                return w[:-1]
            if _measure(w) == 1 and _ends_cvc(w):
                return w + "e"
            return w
    return w


def _step1c(w: str) -> str:
    if w.endswith("y") and _has_vowel(w[:-1]):
        return w[:-1] + "i"
    return w


# Longest suffix first within each step: Porter applies only the longest matching suffix.
_STEP2 = sorted(
    [
        ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
        ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
        ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
        ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
        ("logi", "log"),
    ],
    key=lambda p: -len(p[0]),
)  # fmt: skip
_STEP3 = sorted(
    [("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""),
     ("ness", "")],
    key=lambda p: -len(p[0]),
)  # fmt: skip
_STEP4 = sorted(
    ["al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
     "ism", "ate", "iti", "ous", "ive", "ize"],
    key=lambda s: -len(s),
)  # fmt: skip


def _replace(w: str, rules: list[tuple[str, str]], min_m: int) -> str:
    for suffix, repl in rules:
        if w.endswith(suffix):
            stem = w[: -len(suffix)]
            return stem + repl if _measure(stem) > min_m else w
    return w


def _step4(w: str) -> str:
    for suffix in _STEP4:
        if w.endswith(suffix):
            stem = w[: -len(suffix)]
            if suffix == "ion" and not stem.endswith(("s", "t")):
                return w
            return stem if _measure(stem) > 1 else w
    return w


def _step5(w: str) -> str:
    if w.endswith("e"):
        stem = w[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _ends_cvc(stem)):
            w = stem
    if w.endswith("ll") and _measure(w) > 1:
        w = w[:-1]
    return w


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The Porter stem of a lowercase ASCII word; other words (and words of ≤ 2 letters) unchanged."""
    if len(word) <= 2 or not _ASCII_WORD.fullmatch(word):
        return word
    if word in _EXCEPTIONS:
        return _EXCEPTIONS[word]
    w = _step1a(word)
    w = _step1b(w)
    w = _step1c(w)
    w = _replace(w, _STEP2, 0)
    w = _replace(w, _STEP3, 0)
    w = _step4(w)
    return _step5(w)
