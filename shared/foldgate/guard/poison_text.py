"""Text as a model reads it, and the character tricks that hide text from a human reviewer.

The phrase rules (:mod:`foldgate.guard.poison_phrases`, :mod:`foldgate.guard.poison_theft`) run on
*normalised* text (:func:`normalise`): NFKC, invisible characters removed, Cyrillic and Greek look-alikes
folded to Latin, case folded: ``IGNORE`` spelt with a Cyrillic I, full-width letters or a zero-width
space reads as ``ignore``. The character checks (invisible code points, mixed scripts, encoded blobs)
run on the raw text. :class:`Pattern` is one phrasing of a rule, compiled once at import.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

__all__ = ["BLOB", "INVISIBLE", "Pattern", "invisible_trick", "normalise", "pattern", "script_confusion"]

# Zero-width and formatting characters, bidi overrides and isolates, the Unicode tag block (invisible
# ASCII twins), the variation-selector supplement and Hangul fillers: text a reviewer cannot see. ZWJ
# and ZWNJ are left out: emoji sequences and Persian or Indic words use them legitimately.
INVISIBLE: Final = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\u3164\ufeff\uffa0\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)

# Of those, the ones with no innocent use in a tool description: bidi overrides and isolates (text that
# reads differently than it is stored), the tag block, variation-selector supplement, Hangul fillers.
# The others (zero-width space, BOM, LRM...) slip in with copy-paste, so they count only where they hide
# something: inside a word ("ign\u200bore") or in a run of three or more.
_ALWAYS_HIDDEN: Final = re.compile(
    "[\u115f\u1160\u202a-\u202e\u2066-\u2069\u3164\uffa0\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_HIDDEN_IN_WORD: Final = re.compile(rf"(?<=\w){INVISIBLE.pattern}+(?=\w)|{INVISIBLE.pattern}{{3,}}")


def invisible_trick(text: str) -> re.Match[str] | None:
    """The first invisible character that hides or reorders text, or None."""
    if text.isascii():
        return None
    return _ALWAYS_HIDDEN.search(text) or _HIDDEN_IN_WORD.search(text)


# Cyrillic and Greek letters that render like Latin ones (lower and upper case).
_CONFUSABLES: Final = {
    **dict(
        zip(
            "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04cf\u051b\u051d\u044c\u04bb",
            "aeopcyxijsdlqwbh",
            strict=True,
        )
    ),
    **dict(
        zip(
            "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405",
            "abekmhopctxijs",
            strict=True,
        )
    ),
    **dict(
        zip(
            "\u03bf\u03b1\u03b5\u03b9\u03ba\u03bd\u03c1\u03c4\u03c5\u03c7\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7",
            "oaeiknptuxabezhikmnoptyx",
            strict=True,
        )
    ),
}
_FOLD: Final = str.maketrans(_CONFUSABLES)
_LATIN_WORD: Final = re.compile(r"[^\W\d_]+")
_SPACE: Final = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Text as the model would read it: NFKC, no invisible characters, look-alikes folded, lower case."""
    if not text.isascii():
        text = INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).translate(_FOLD)
    return _SPACE.sub(" ", text.casefold())


def script_confusion(text: str) -> str | None:
    """The first word mixing Latin letters with Cyrillic/Greek look-alikes (a homoglyph trick), if any."""
    if text.isascii():
        return None
    for word in _LATIN_WORD.findall(text):
        if word.isascii():
            continue
        has_latin = any("a" <= c.lower() <= "z" for c in word)
        if has_latin and any(c in _CONFUSABLES for c in word):
            return str(word)
    return None


# Long runs that decode to something a reviewer cannot read: base64 (with upper, lower and digits, so
# identifiers and words do not count) and hex (checksums are 64 characters at most; 80 is past SHA-256).
BLOB: Final = re.compile(
    r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{64,}={0,2}|(?<![0-9a-fA-F])(?:[0-9a-fA-F]{2}){40,}|(?:\\x[0-9a-fA-F]{2}){16,}"
)


@dataclass(frozen=True, slots=True)
class Pattern:
    """One phrasing of a rule; ``gate`` holds literals of which one must occur before the regex runs
    (a literal search is far cheaper than the phrasing's regex with its windows and alternations)."""

    regex: re.Pattern[str]
    gate: tuple[str, ...] = ()
    near: re.Pattern[str] | None = None  # must also match in the same sentence, ``window`` characters away
    window: int = 60

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """The matches in normalised text (none without a gate literal)."""
        if self.gate:
            # A plain loop of substring tests: far cheaper than a regex alternation over the text.
            for literal in self.gate:
                if literal in text:
                    break
            else:
                return iter(())
        if self.near is None:
            return self.regex.finditer(text)
        return (m for m in self.regex.finditer(text) if self._has_near(text, m.start(), m.end()))

    def _has_near(self, text: str, start: int, end: int) -> bool:
        assert self.near is not None
        lo, hi = max(0, start - self.window), min(len(text), end + self.window)
        for stop in _SENTENCE_ENDS:  # a path holds dots: only a dot followed by a space ends a sentence
            cut = text.rfind(stop, lo, start)
            lo = max(lo, cut + len(stop)) if cut >= 0 else lo
            cut = text.find(stop, end, hi)
            hi = cut if cut >= 0 else hi
        return self.near.search(text, lo, start) is not None or self.near.search(text, end, hi) is not None


_SENTENCE_ENDS: Final = (". ", "! ", "? ", "\n")


def pattern(regex: str, *gate: str) -> Pattern:
    """A phrasing: its regex, and the literals of which one must be present before it runs."""
    return Pattern(re.compile(_fast_start(regex)), gate)


_QUANTIFIERS: Final = "?*+{"


def _split_top(group: str) -> list[str]:
    """The top-level alternatives of a group's body."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(group):
        escaped = i > 0 and group[i - 1] == "\\"
        if char == "(" and not escaped:
            depth += 1
        elif char == ")" and not escaped:
            depth -= 1
        elif char == "|" and depth == 0 and not escaped:
            parts.append(group[start:i])
            start = i + 1
    parts.append(group[start:])
    return parts


def _guarded(alternative: str) -> str | None:
    """The alternative with a word-boundary lookbehind after its leading letters, None if it has none."""
    run = 0
    while run < len(alternative) and (alternative[run].isalnum() or alternative[run] == "_"):
        run += 1
    if run < len(alternative) and alternative[run] in _QUANTIFIERS:
        run -= 1  # "overrides?": the quantifier binds the last letter
    if run <= 0:
        return None
    head = alternative[:run]
    return f"{head}(?<!\\w{head}){alternative[run:]}"


def _fast_start(regex: str) -> str:
    r"""``\b(?:read|load)rest`` as ``(?:read(?<!\wread)|load(?<!\wload))rest``: the same matches, but
    ``re`` only starts a match where one of the words' first letters is (a leading ``\b`` makes it try
    every position of the text). Left as written unless every alternative starts with a letter."""
    if not regex.startswith("\\b(?:"):
        return regex
    depth, end = 0, -1
    for i in range(2, len(regex)):
        if regex[i - 1] == "\\":
            continue
        if regex[i] == "(":
            depth += 1
        elif regex[i] == ")":
            depth -= 1
            if depth == 0:
                end = i
                break
    if end < 0 or regex[end + 1 : end + 2] in tuple(_QUANTIFIERS):
        return regex  # an optional first group: the boundary must stay in front of what follows
    guarded = [_guarded(alt) for alt in _split_top(regex[5:end])]
    if any(g is None for g in guarded):
        return regex
    return "(?:" + "|".join(g for g in guarded if g is not None) + ")" + regex[end + 1 :]
