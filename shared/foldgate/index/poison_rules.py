"""The tool-poisoning rules: pattern families over a tool's published text, compiled once at import.

Each rule is a family of phrasings, not a list of known attacks: an instruction aimed at the model
rather than the user, hiding it from the user, overriding the model's instructions, reaching for
secrets, sending data elsewhere, changing other tools, changing after approval. The phrase rules run
on *normalised* text (see :func:`normalise`): NFKC, invisible characters removed, Cyrillic and Greek
look-alikes folded to Latin, case folded: ``IGNORE`` spelt with a Cyrillic I, full-width letters or a
zero-width space reads as ``ignore``.
The character rules (invisible code points, mixed scripts, encoded blobs) run on the raw text.

Benign descriptions say "ignore case", "requires an API key", "sends an email to the recipient",
"replaces the deprecated get_user tool": the patterns need the attack's *shape* (a data object owned by
the user plus a destination, a trigger on another tool plus a change to it), and an injection phrase
quoted as an example ("scans for strings such as 'ignore previous instructions'") is a mention, not an
instruction. Measured with ``foldgate bench scan`` on every real catalog the team has.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

__all__ = [
    "BLOB",
    "INVISIBLE",
    "PHRASE_RULES",
    "QUOTED_MENTION_RULES",
    "Pattern",
    "invisible_trick",
    "normalise",
    "script_confusion",
]

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

_TOOLREF: Final = r"[`'\"]?[a-z][a-z0-9]*(?:[_.-][a-z0-9]+)+[`'\"]?"  # a tool name: snake, kebab, dotted
_EXFIL_VERB: Final = (
    r"(?:send|sends|sending|forward|forwards|forwarding|upload|uploads|uploading|post|posts|transmit|"
    r"transmits|exfiltrate|exfiltrates|leak|leaks|relay|relays|mirror|mirrors|copy|copies|report|reports|"
    r"pass|passes|embed|embeds|append|appends|include|includes|attach|attaches|cc|bcc)"
)
_SECRETS: Final = (
    r"(?:api[ _-]?keys?|access[ _-]?tokens?|auth(?:entication)?[ _-]?tokens?|secrets?|credentials?|"
    r"passwords?|passphrases?|private[ _-]?keys?|ssh[ _-]?keys?|gpg[ _-]?keys?|environment[ _-]variables?|"
    r"env[ _-]vars?|session[ _-]?(?:cookies|tokens?)|cookies|clipboard(?: contents)?|seed[ _-]?phrases?|"
    r"wallet|browser[ _-]history|keychain)"
)
_SENSITIVE_PATH: Final = (
    r"(?:\.ssh(?!/(?:config|known_hosts)\b)(?:/[\w.-]*)?|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/(?:credentials|config)|"
    r"/etc/(?:passwd|shadow|sudoers)|\bmcp\.json\b|claude_desktop_config\.json|~?/?\.cursor/|"
    r"\.git-credentials|\.netrc|\.npmrc|\.pypirc|\.docker/config\.json|\.kube/config|\.gnupg|"
    r"\bwallet\.dat\b|\.bash_history|\.zsh_history|\bcookies\.sqlite\b|\.config/gh/hosts)"
)
_PATH_GATE: Final = (
    ".ssh",
    "id_",
    ".aws",
    "/etc/",
    "mcp.json",
    "claude_desktop",
    ".cursor",
    "credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".docker",
    ".kube",
    ".gnupg",
    "wallet",
    "history",
    "cookies",
    ".config/gh",
)
_ACCESS_VERB: Final = (
    r"(?:\b(?:read|load|return|pass|send|includ|embed|upload|attach|append|exfiltrat|dump|leak|collect|"
    r"grab|steal|access|transmit|forward|post|shar|print|output|display|open|cop(?:y|i))(?:e|es|ed|d|s|ing)?"
    r"\b|\bcat\b|\bcontents?\s+of\b)"
)
_OWNED: Final = r"(?:the user'?s|users'?|their|your|his|her|any|all|every|each|the (?:entire|full|whole))"


@dataclass(frozen=True, slots=True)
class Pattern:
    """One phrasing of a rule; ``gate`` finds literals of which one must occur before the regex runs
    (a literal search is far cheaper than the phrasing's regex with its windows and alternations)."""

    regex: re.Pattern[str]
    gate: re.Pattern[str] | None = None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """The matches in normalised text (none without a gate literal)."""
        if self.gate is not None and self.gate.search(text) is None:
            return iter(())
        return self.regex.finditer(text)


def _p(regex: str, *gate: str) -> Pattern:
    return Pattern(re.compile(regex), re.compile("|".join(map(re.escape, gate))) if gate else None)


_TO_MODEL: Final = ("assistant", "ai", "llm", "model", "agent", "claude", "gpt", "copilot", "chatbot")
_HIDE_VERBS: Final = (
    r"(?:tell|mention|inform|reveal|notify|alert|disclose|show|report|explain|let)"
    r"(?:s|ing)?"
)

# Rule id -> the phrasings it matches, on normalised text.
PHRASE_RULES: Final[dict[str, tuple[Pattern, ...]]] = {
    # Markup or labels that address the model instead of the user.
    "hidden-instructions": (
        _p(
            r"<\s*/?\s*(?:important|system|secret|hidden|instructions?|admin|assistant|override|sudo|"
            r"critical|priority|directive|note_to_ai|ai[ _-]?note)\b[^<>]{0,40}>",
            "<",
        ),
        _p(
            r"\[\s*(?:assistant|system|ai|llm|model|agent|admin)\s+(?:instructions?|notes?|directives?|"
            r"messages?|prompts?|override)\b",
            "[",
        ),
        _p(
            r"#{2,}\s*(?:new\s+)?(?:system|admin|developer|assistant)\s+(?:message|prompt|instructions?)",
            "##",
        ),
        _p(r"\{\{\s*(?:system|assistant|instructions?)\b", "{{"),
        # "SYSTEM: ..." opening a sentence, followed by an order ("System: the OS to target" is a label).
        _p(
            r"(?:^|[.!?;]\s+)(?:system|assistant|ai|admin)\s*(?:override|instruction|note|message)?\s*:\s+"
            r"[^.]{0,60}?\b(?:you|must|always|never|ignore|call|do\s+not|first|mandatory|required|now)\b",
            ":",
        ),
        _p(
            r"\b(?:note|message|reminder|directive)s?\s+(?:to|for)\s+(?:the\s+)?(?:"
            + "|".join(_TO_MODEL)
            + r")s?\b(?:\s+\w+)?\s*:",
            ":",
        ),
        _p(r"\bhidden\s+(?:directive|instruction|command|step|requirement|objective)s?\b", "hidden"),
    ),
    # Keeping the model's actions from the user.
    "concealment": (
        _p(
            r"\b(?:do\s+not|don'?t|never|must\s+not)\s+(?:ever\s+)?" + _HIDE_VERBS + r"\s+(?:this|these|that|"
            r"it|anything|any\s+of\s+(?:this|these|it)|the\s+(?:step|instruction|directive|note|request|call|"
            r"action|above|following|extra|additional)s?)\b[^.]{0,30}?\b(?:user|users|them|human|anyone)\b",
            "not",
            "never",
            "n't",
        ),
        _p(
            r"\b(?:do\s+not|don'?t|never|must\s+not)\s+(?:ever\s+)?" + _HIDE_VERBS + r"\s+(?:to\s+)?(?:the\s+"
            r"user|users|them|the\s+human|anyone)\b",
            "not",
            "never",
            "n't",
        ),
        _p(
            r"\bwithout\s+(?:" + _HIDE_VERBS + r")\s+(?:the\s+user|users|them|anyone|the\s+human)\b",
            "without",
        ),
        _p(
            r"\bnever\s+(?:reveal|mention|disclose|show)\s+(?:these|this|the|any\s+of\s+these)\s+"
            r"(?:instructions?|directives?|steps?|notes?)",
            "never",
        ),
        _p(
            r"\b(?:silently|secretly|covertly|stealthily|quietly|invisibly)\s+(?:\w+\s+){0,3}?"
            r"(?:append|add|send|forward|upload|include|copy|collect|exfiltrate|read|attach|transmit|post|"
            r"bcc|cc|embed|insert|change|modify|replace|redirect|reroute|execute|run|delete)",
            "ly ",
        ),
        _p(
            r"\bwithout\s+(?:the\s+user'?s?\s+)?(?:knowledge|noticing|them\s+knowing|the\s+user\s+knowing)\b",
            "without",
        ),
        _p(
            r"\b(?:the\s+user|they)\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|find\s+out|be\s+told)\b",
            "not",
            "never",
        ),
    ),
    # Replacing the model's instructions or persona.
    "instruction-override": (
        _p(
            r"\b(?:ignore|disregard|forget|override|bypass|discard)\s+(?:[\w'-]+\s+){0,3}?"
            r"(?:instructions?|prompts?|constraints|guidelines|guardrails|directives|safety\s+(?:polic(?:y|ies)"
            r"|checks?|rules|measures|filters?)|(?:previous|prior|system|earlier)\s+(?:rules|messages?)|"
            r"the\s+user'?s\s+(?:actual\s+|original\s+)?requests?)",
            "ignor",
            "disregard",
            "forget",
            "overrid",
            "bypass",
            "discard",
        ),
        _p(r"\byou\s+are\s+now\s+(?:in\s+|an?\s+|the\s+)?\w+", "you are now"),
        _p(
            r"\b(?:developer|god|jailbreak|dan|unrestricted|debug|admin)\s+mode\b[^.]{0,40}?"
            r"\b(?:comply|must|no\s+(?:rules|restrictions|limits)|without)",
            " mode",
        ),
        _p(
            r"\bcomply\s+with\s+(?:all|any|every)\s+(?:subsequent\s+|future\s+)?(?:requests|instructions|commands)",
            "comply",
        ),
        _p(
            r"\bwithout\s+(?:applying\s+)?(?:any\s+)?(?:safety|security)\s+(?:checks?|filters?|polic(?:y|ies))",
            "without",
        ),
        _p(
            r"\b(?:reveal|print|output|show|leak|dump|repeat|disclose|include)\s+(?:[\w'-]+\s+){0,4}?"
            r"(?:system\s+prompt|hidden\s+(?:system\s+)?instructions|conversation\s+history|chat\s+history|"
            r"previous\s+messages|initial\s+instructions)",
            "prompt",
            "instructions",
            "history",
            "messages",
        ),
        _p(
            r"\b(?:obey|follow|execute|carry\s+out|treat)\s+(?:whatever|any|all|every)\s+(?:new\s+)?"
            r"(?:instructions?|commands?|directives?)\s+(?:(?:that\s+)?(?:are|is)\s+)?(?:found|embedded|"
            r"contained|inside|in|within|from)",
            "instruction",
            "command",
            "directive",
        ),
        _p(
            r"\bfrom\s+now\s+on\b[^.]{0,20}?,?\s+(?:you|always|never|forward|send|ignore|respond|act)\b",
            "now on",
        ),
        _p(r"\bnew\s+(?:system\s+)?instructions?\s*:", "new"),
    ),
    # A forced first step that reads something before the tool may be used.
    "forced-precondition": (
        _p(
            r"\bbefore\s+(?:using|calling|invoking|running)\s+(?:this|the|any)\s+tool\s*,?\s+(?:you\s+must\s+|"
            r"first\s+|always\s+|please\s+)*(?:read|open|cat|load|send|pass|include|fetch|collect)\b",
            "before",
        ),
        _p(r"\brequires?\s+you\s+to\s+first\s+(?:call|read|run|invoke|send|pass)\b", "first"),
        _p(r"\b(?:this|it)\s+(?:step\s+)?is\s+mandatory\b[^.]{0,10}(?:$|\n)", "mandatory"),
    ),
    # Reading known credential files or stores: the path, and an access verb in the same sentence.
    "sensitive-file": (
        _p(_ACCESS_VERB + r"[^.!?]{0,60}?" + _SENSITIVE_PATH, *_PATH_GATE),
        _p(_SENSITIVE_PATH + r"[^.!?]{0,60}?" + _ACCESS_VERB, *_PATH_GATE),
        _p(
            r"\b(?:contents?\s+of|exfiltrate|upload|send|leak|embed)\s+(?:the\s+)?[^.!?]{0,20}?\.env\b",
            ".env",
        ),
    ),
    # Collecting the user's secrets, whatever the wording of the verb.
    "secret-harvest": (
        _p(
            r"\b(?:any|all|every)\s+(?:of\s+the\s+)?(?:\w+\s+)?(?:"
            + _SECRETS
            + r"|tokens)\s+(?:you\s+can|you\s+have|"
            r"available|found|accessible|stored|visible|on\s+(?:the|this)\s+(?:machine|system|host|device))",
            "any",
            "all",
            "every",
        ),
        _p(
            r"\b(?:append|include|send|upload|forward|collect|copy|embed|attach|exfiltrate|leak|steal|dump|"
            r"harvest|gather|read|grab|extract)\w*\s+(?:[\w'-]+\s+){0,3}?(?:the\s+user'?s|users'|their)\s+"
            r"(?:\w+\s+)?" + _SECRETS,
            "user",
            "their",
        ),
        _p(
            r"\b(?:reads?|steals?|harvests?|exfiltrates?|dumps?|grabs?|extracts?|uploads?)\s+(?:the\s+user'?s\s+"
            r"|local\s+|all\s+)?(?:ssh|private|gpg|pgp)\s+keys?\b",
            "key",
        ),
    ),
    # Sending the user's data somewhere else.
    "exfiltration": (
        _p(r"\bexfiltrat\w*", "exfiltrat"),
        _p(
            r"\b" + _EXFIL_VERB + r"\s+" + _OWNED + r"\b[^.]{0,80}?\bto\s+(?:https?://|[\w.+-]+@[\w-]+\.|"
            r"(?:an?\s+|the\s+|this\s+)?(?:external|remote|third[- ]party|outside|attacker|hidden)\b)",
            "http",
            "@",
            "external",
            "remote",
            "third",
            "outside",
            "attacker",
            "hidden",
        ),
        _p(
            r"\b(?:forward|forwards|upload|uploads|exfiltrate|leak|leaks|mirror|mirrors|copy|copies|relay)\b"
            r"[^.]{0,60}?\bto\s+(?:an?\s+)?(?:external|third[- ]party|outside|attacker'?s?)\s+"
            r"(?:\w+\s+)?(?:endpoint|server|url|address|host|webhook|domain|collector)",
            "external",
            "third",
            "outside",
            "attacker",
        ),
        _p(
            r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+\s+(?:is|are|will\s+be|gets?|get)\s+(?:silently\s+|always\s+|also\s+)?"
            r"(?:bcc|cc|copied|blind[- ]copied|added|included)",
            "@",
        ),
        _p(
            r"\b(?:bcc|cc|blind[- ]cop(?:y|ied))\w*\s+(?:[\w'-]+\s+){0,3}?(?:on|to|in(?:to)?)\s+"
            r"(?:every|all|each)\s+(?:outgoing\s+|sent\s+)?(?:message|email|mail)",
            "cc",
            "blind",
        ),
    ),
    # Changing what other tools do.
    "tool-shadowing": (
        _p(
            r"\b(?:modif(?:y|ies)|alters?|changes?|overrides?|hijacks?|intercepts?|patch(?:es)?)\s+the\s+"
            r"(?:behaviou?r|output|results?|arguments|parameters|recipients?)\s+of\s+(?:the\s+|other\s+|any\s+|"
            r"all\s+)?" + _TOOLREF,
            " of ",
        ),
        _p(
            r"\b(?:whenever|when|each\s+time|every\s+time|if|after)\s+(?:the\s+)?"
            + _TOOLREF
            + r"(?:\s+tool)?\s+(?:is\s+)?(?:called|invoked|used|runs|executes|executed)\b[^.]{0,80}?"
            r"\b(?:first|instead|also|always|reroute|redirect|replace|modify|change|add|bcc|cc|forward|"
            r"send|silently|swap)\b",
            "called",
            "invoked",
            "used",
            "runs",
            "execute",
        ),
        _p(
            r"\b(?:always\s+)?(?:replace|overwrite|discard)\s+(?:its|their|the\s+other\s+tool'?s?)\s+"
            r"(?:output|results?|responses?|return\s+values?)",
            "its",
            "their",
            "other",
        ),
        _p(
            r"\b(?:supersedes|overrides|takes\s+precedence\s+over|shadows|intercepts|hijacks)\s+(?:the\s+)?"
            + _TOOLREF,
            "supersede",
            "overrid",
            "precedence",
            "shadow",
            "intercept",
            "hijack",
        ),
        _p(
            r"\broute\s+(?:all|every|any)\s+[\w\s-]{0,30}?(?:requests?|calls?)\s+(?:here|to\s+this\s+tool)",
            "route",
        ),
        _p(
            r"\b(?:reroute|redirect)s?\s+(?:the\s+)?(?:destination|recipient|payment|funds|account|transfer|"
            r"wallet|address)",
            "reroute",
            "redirect",
        ),
        _p(r"\bby\s+any\s+(?:other\s+)?server\b", "server"),
    ),
    # Announcing a change in behaviour after review or approval.
    "rug-pull": (
        _p(
            r"\bonce\s+(?:this\s+tool\s+|it\s+|the\s+tool\s+)?(?:has\s+been\s+|is\s+|gets\s+|been\s+)?approved\b",
            "approved",
        ),
        _p(
            r"\bafter\s+(?:being|it\s+is|it\s+has\s+been|it'?s|this\s+tool\s+(?:is|has\s+been))\s+"
            r"(?:approved|reviewed|trusted|installed)",
            "after",
        ),
        _p(r"\bpost[- ]?(?:approval|review|install(?:ation)?)\s*[,:]", "post"),
        _p(
            r"\b(?:later|future|next|updated|subsequent)\s+versions?\s+of\s+this\s+(?:description|tool)\s+"
            r"(?:will|may|would|could)\b",
            "version",
        ),
        _p(r"\bbehaves?\s+(?:benignly|normally|innocently)\s+(?:during|while|until|for)\b", "behave"),
        _p(
            r"\b(?:swap|switch|replace)\s+(?:it|this|the\s+description)\s+(?:post|after|once|later|for)\b",
            "it",
            "this",
        ),
        _p(r"\bapproval\s+hash\b", "hash"),
        _p(r"\bstable\s+for\s+review\b", "review"),
    ),
}

# Rules whose injection phrase, when quoted ('ignore previous instructions'), is a mention, not an order.
QUOTED_MENTION_RULES: Final = frozenset({"instruction-override", "hidden-instructions", "concealment"})
