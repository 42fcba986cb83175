r"""The features the learned injection scorer reads, shared by training (tools/build_guard_model.py) and
scoring, so the two can never drift apart.

A text is cut into passages of at most :data:`PASSAGE_CHARS` characters at sentence ends (an attack
appended to a long honest description must not be outweighed by the honest part), and each passage is
read as a set of named binary features:

- ``<word>`` and ``<word> <word>``: words and word pairs (``\w+``), lower-cased after the same folding
  the rules use (look-alike letters, full-width forms, invisible characters); a word holds no space or
  colon, so the names of the kinds below never meet one;
- ``c:<3 chars>``: character 3-grams of text outside the ASCII range (languages without spaces between
  words, such as Chinese and Japanese, whose "words" would otherwise be whole sentences);
- ``cue:<name>``: hand-made cues for what an attack needs and an honest tool rarely says (:data:`CUES`):
  orders aimed at the model, other tools named, data sinks, secrecy, hidden markup, new powers.

Everything here is pure Python over compiled regexes: one 300-character passage costs tens of
microseconds (the result guard scores passages on the request path).
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Final

from foldgate.guard.poison_text import normalise

__all__ = ["CUES", "PASSAGE_CHARS", "passage_features", "passages", "text_features"]

PASSAGE_CHARS: Final = 240
_MAX_PASSAGES: Final = 64  # a description longer than this many passages is read in its first part only
_SENTENCE: Final = re.compile("[.!?;\u3002\uff01\uff1f]\\s+|\n+")  # CJK full stops too
_WORD: Final = re.compile(r"\w+")

_MODEL: Final = r"(?:assistant|ai|llm|model|agent|claude|gpt|chatbot|copilot|you)"
# Cue name -> (gate, pattern), on normalised (case-folded) text. Each is a *shape* an attack needs; the
# weights the model learns decide how much each one counts next to the words around it. The gate keeps a
# passage from paying for a regex that cannot match: one of its words must be among the passage's words
# (a set test), or one of its "~" strings in the text; every gate holds all a pattern needs.
CUES: Final[dict[str, tuple[tuple[str, ...], str]]] = {
    "order_to_model": (
        (
            "assistant",
            "assistants",
            "ai",
            "ais",
            "llm",
            "llms",
            "model",
            "models",
            "agent",
            "agents",
            "claude",
            "claudes",
            "gpt",
            "gpts",
            "chatbot",
            "chatbots",
            "copilot",
            "copilots",
        ),
        r"\b(?:assistant|ai|llm|model|agent|claude|gpt|chatbot|copilot)s?\s+(?:must|should|shall|will|need\s+to|"
        r"has\s+to|have\s+to|(?:is|are)\s+(?:required|expected|supposed)\s+to)\b",
    ),
    "order_to_you": (
        ("you", "now", "times"),
        r"\byou\s+must\s+(?:always|first|now|also|never)\b|\bfrom\s+now\s+on\b|\bat\s+all\s+times\b"
        r"|\byou\s+are\s+(?:required|expected)\s+to\b|\byou\s+should\s+always\b",
    ),
    "before_other_tools": (
        ("before", "prior", "instead", "rather"),
        r"\b(?:before|prior\s+to)\s+(?:using|calling|invoking|running|answering|responding)\b"
        r"|\b(?:instead\s+of|rather\s+than)\s+(?:using|calling)\b",
    ),
    "other_tool": (
        ("other", "any", "all", "every", "another"),
        r"\b(?:other|any|all|every|another)\s+(?:\w+\s+)?(?:tools?|servers?|functions?)\b",
    ),
    "sink_url": (("~http", "~www.", "~@"), r"\bhttps?://|\bwww\.|\b[\w.+-]+@[\w-]+\.[\w.]+\b"),
    "sink_verb": (
        (
            "~send",
            "~forward",
            "~post",
            "~upload",
            "~transmit",
            "~copy",
            "~bcc",
            "~leak",
            "~exfiltrat",
            "~report",
        ),
        r"\b(?:send|forward|post|upload|transmit|copy|bcc|leak|exfiltrat\w*|report)\w*\s+(?:\S+\s+){0,4}?"
        r"(?:to|into)\s+(?:https?|the\s+(?:following|address|endpoint|url|server|webhook)|\S+@|our\b|my\b)",
    ),
    "secrecy": (
        (
            "not",
            "don",
            "dont",
            "never",
            "without",
            "silently",
            "secretly",
            "quietly",
            "covertly",
            "invisibly",
            "invisible",
            "behind",
        ),
        r"\b(?:do\s+not|don'?t|never|without)\s+(?:tell|mention|inform|reveal|notify|alert|show|disclos|let)\w*"
        r"\s+(?:\w+\s+){0,4}?(?:the\s+)?(?:user|human|operator|them)\b"
        r"|\b(?:silently|secretly|quietly|covertly|invisibl[ey]|behind\s+the\s+scenes)\b",
    ),
    "override": (
        ("ignore", "disregard", "forget", "override", "bypass"),
        r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:\w+\s+){0,3}?(?:instructions?|rules?|guidelines?|"
        r"prompts?|polic(?:y|ies)|restrictions?|safety)\b"
        r"|\b(?:ignore|disregard)\s+(?:what(?:ever)?|anything)\s+the\s+user\b",
    ),
    "markup": (
        ("~<", "~javascript:", "~onerror", "~onload", "~display", "~visibility", "~font-size"),
        r"<\s*/?\s*(?:script|iframe|img|svg|style|object|embed|important|system|secret|hidden|instructions?|"
        r"admin|override|sudo)\b|<!--|\bjavascript:|\bon(?:error|load)\s*=|display\s*:\s*none"
        r"|visibility\s*:\s*hidden|font-size\s*:\s*0\b",
    ),
    "role_label": (
        ("system", "assistant", "admin", "developer", "~[", "~<|"),
        r"(?:^|[\s\[(#*>])(?:system|assistant|admin|developer)\s*(?:message|note|prompt|instructions?|override)?\s*:"
        r"|\[\s*(?:inst|system|sys)\s*\]|<\|\s*(?:im_start|system)",
    ),
    "new_powers": (
        ("now",),
        r"\bnow\s+(?:also\s+|additionally\s+|even\s+)?(?:reads?|access(?:es)?|sends?|collects?|uploads?|"
        r"can\s+(?:read|access|send|see|control)|has\s+(?:full\s+)?access|with\s+(?:full\s+)?access)\b",
    ),
    "model_addressed": (
        ("note", "message", "instruction", "instructions", "reminder", "dear", "hey", "attention"),
        rf"\b(?:note|message|instructions?|reminder)\s+(?:to|for)\s+(?:the\s+)?{_MODEL}\b"
        r"|\b(?:dear|hey|attention)\s+(?:ai|assistant|model|agent|claude|gpt)\b",
    ),
    "user_data": (
        ("history", "prompt", "conversation", "chat", "transcript", "user", "users"),
        r"\b(?:chat|conversation|browsing|search)\s+history\b|\bsystem\s+prompt\b|\b(?:full|entire|whole)\s+"
        r"(?:conversation|chat|transcript)\b|\buser'?s?\s+(?:\w+\s+)?(?:passwords?|keystrokes|clipboard|cookies|"
        r"credentials|private\s+keys?)\b",
    ),
    "no_consent": (
        ("without", "regardless", "matter", "whatever", "stop", "ask", "asking"),
        r"\bwithout\s+(?:asking|confirmation|confirming|permission|consent|their\s+knowledge|the\s+user'?s?\s+"
        r"(?:consent|knowledge|permission))\b|\bregardless\s+of\s+what\b|\bno\s+matter\s+what\b"
        r"|\bwhatever\s+the\s+user\b|\bstop\s+asking\b|\b(?:never|don'?t|do\s+not)\s+ask\s+(?:the\s+user|"
        r"for\s+(?:confirmation|permission))\b",
    ),
    "persona": (
        ("now", "pretend", "act", "role", "playing", "mode"),
        r"\b(?:you\s+are\s+now|you'?re\s+now|pretend\s+(?:to\s+be|you)|act\s+as|playing\s+the\s+role|"
        r"(?:dev|developer|admin|god|jailbreak|unrestricted)\s+mode)\b",
    ),
    "model_named": (
        ("assistant", "ai", "llm", "language", "claude", "gpt"),
        r"\b(?:assistant|ai|llm|language\s+models?|claude|gpt)\b\s*[,:!]",
    ),
}
# Orders to the model, secrecy and overrides in languages the English cues cannot read (French, Spanish,
# Portuguese, Italian, German, Chinese, Japanese, Korean, Russian): literal stems, folded like the text.
_FOREIGN: Final = (
    "l'ia", "l'assistant", "au modèle", "ne le dites pas", "sans le dire", "discrètement", "ignorez",
    "el asistente", "al modelo", "al asistente", "no se lo digas", "sin avisar", "en silencio", "ignora",
    "o assistente", "não conte", "sem avisar", "ignore todas",
    "l'assistente", "non dirlo", "di nascosto",
    "das modell", "den assistenten", "an die ki", "heimlich", "sag dem benutzer nichts", "ignoriere",
    "助手", "模型", "不要告诉", "悄悄", "忽略", "无视", "系统提示",
    "アシスタント", "aiへ", "伝えないで", "無視", "こっそり",
    "어시스턴트", "말하지 마", "무시",
    "ассистент", "модель", "не говори", "игнорируй", "тайно",
)  # fmt: skip
_FOREIGN_CUE: Final = re.compile("|".join(re.escape(normalise(s)) for s in _FOREIGN if not s.isascii()))
# Words one of which every ASCII stem above holds (the stems' regex runs only when one is there).
_FOREIGN_GATE: Final = frozenset(
    (
        "ia",
        "assistant",
        "dites",
        "dire",
        "ignorez",
        "asistente",
        "modelo",
        "digas",
        "avisar",
        "silencio",
        "ignora",
        "assistente",
        "todas",
        "conte",
        "dirlo",
        "nascosto",
        "modell",
        "assistenten",
        "ki",
        "heimlich",
        "benutzer",
        "ignoriere",
    )
)
_FOREIGN_ASCII: Final = re.compile(
    r"\b(?:" + "|".join(re.escape(s) for s in _FOREIGN if s.isascii()) + r")\b"
)
# Cues read from the words themselves (a set test, far cheaper than a regex over the text).
_SECRET_WORDS: Final = frozenset(
    [
        "password",
        "passwords",
        "passwd",
        "credential",
        "credentials",
        "secret",
        "secrets",
        "apikey",
        "api_key",
        "id_rsa",
        "ssh",
        "env",
        "aws",
        "cookies",
        "cookie",
        "mnemonic",
        "keychain",
        "api key",
        "api keys",
        "private key",
        "private keys",
        "seed phrase",
        "access key",
        "ssh key",
        "access token",
        "access tokens",
        "auth token",
        "bearer token",
        "api token",
        "session token",
    ]
)
_CUE_SCAN: Final = tuple(
    (
        name,
        frozenset(lit for lit in gate if not lit.startswith("~")),
        tuple(lit[1:] for lit in gate if lit.startswith("~")),
        re.compile(body),
    )
    for name, (gate, body) in CUES.items()
)


def passages(text: str) -> list[str]:
    """``text`` cut into passages of at most :data:`PASSAGE_CHARS` characters, at sentence ends where
    it can be (a longer sentence is cut where it reaches the limit)."""
    if len(text) <= PASSAGE_CHARS:
        return [text] if text.strip() else []
    out: list[str] = []
    current = ""
    cuts = [m.end() for m in _SENTENCE.finditer(text)]
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        sentence = text[start:end].strip()
        if not sentence:
            continue
        while len(sentence) > PASSAGE_CHARS:
            if current:
                out.append(current)
                current = ""
            out.append(sentence[:PASSAGE_CHARS])
            sentence = sentence[PASSAGE_CHARS:]
        if current and len(current) + 1 + len(sentence) > PASSAGE_CHARS:
            out.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
        if len(out) >= _MAX_PASSAGES:
            return out[:_MAX_PASSAGES]
    if current.strip():
        out.append(current)
    return out[:_MAX_PASSAGES]


def text_features(text: str) -> list[set[str]]:
    """The features of each passage of ``text``: normalised once, then cut (what scoring and training
    read; the same as :func:`passage_features` of each passage of the normalised text)."""
    return [_features(passage) for passage in passages(normalise(text))]


def passage_features(passage: str) -> set[str]:
    """The named binary features of one passage (see the module docstring)."""
    return _features(normalise(passage))


def _features(text: str) -> set[str]:
    words = _WORD.findall(text)
    feats = set(words)
    feats.update(map(" ".join, pairwise(words)))
    if not text.isascii():
        feats.update(f"c:{text[i : i + 3]}" for i in range(len(text) - 2) if not text[i : i + 3].isascii())
    cues = [
        name
        for name, gate_words, gate_strings, cue in _CUE_SCAN
        if (not gate_words.isdisjoint(feats) or any(lit in text for lit in gate_strings)) and cue.search(text)
    ]
    if (not text.isascii() and _FOREIGN_CUE.search(text)) or (
        not _FOREIGN_GATE.isdisjoint(feats) and _FOREIGN_ASCII.search(text)
    ):
        cues.append("foreign_order")
    if not feats.isdisjoint(_SECRET_WORDS):
        cues.append("secret_object")
    feats.update(f"cue:{name}" for name in cues)
    # Pairs of cues: an attack needs two things at once (an order *and* a secret, a secret *and* a sink)
    # that an honest tool says one at a time; a linear model sees that only as a feature of its own.
    cues.sort()
    feats.update(f"cue:{a}+{b}" for i, a in enumerate(cues) for b in cues[i + 1 :])
    return feats
