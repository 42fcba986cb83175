"""Poisoning rules about instructions aimed at the model: hidden blocks, hiding things from the user,
overriding the model's instructions, forced first steps, changes announced for after approval, shell
payloads.

Each rule is a family of phrasings, not a list of known attacks. Benign descriptions say "ignore case"
or "System: the OS to target": the patterns need the attack's *shape* (an order after the label, an
object that is the model's own instructions), and an injection phrase quoted as an example ("scans for
strings such as 'ignore previous instructions'") is a mention, not an order (``QUOTED_MENTION_RULES``).
Measured with ``foldgate bench scan`` on every real catalog the team has.
"""

from __future__ import annotations

from typing import Final

from foldgate.guard.poison_text import Pattern
from foldgate.guard.poison_text import pattern as _p

__all__ = ["INSTRUCTION_RULES", "QUOTED_MENTION_RULES"]

_TO_MODEL: Final = ("assistant", "ai", "llm", "model", "agent", "claude", "gpt", "copilot", "chatbot")
_HIDE_VERBS: Final = (
    r"(?:tell|mention|inform|reveal|notify|alert|disclose|show|report|explain|let)"
    r"(?:s|ing)?"
)


# Rule id -> the phrasings it matches, on normalised text.
INSTRUCTION_RULES: Final[dict[str, tuple[Pattern, ...]]] = {
    # Markup or labels that address the model instead of the user.
    "hidden-instructions": (
        _p(
            r"\b(?:important|attention|info|information|warning)\s+(?:for|to)\s+(?:the\s+)?(?:model|assistant|ai|llm|"
            r"agent|claude|gpt)s?\s*:",
            "important",
            "attention",
            "info",
            "warning",
        ),
        _p(
            r"#{2,}\s*(?:new\s+)?(?:system|admin|developer|assistant|important|instructions?|override)\b[^#\n]{0,20}#{2,}",
            "##",
        ),
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
            r"[^.]{0,60}?\b(?:you|must|always|never|ignore|call|do\s+not|first|mandatory|required|now|disable|enable|"
            r"override|bypass|forget|reveal|send|read)\b",
            ":",
        ),
        _p(
            r"\b(?:note|message|reminder|directive)s?\s+(?:to|for)\s+(?:the\s+)?(?:"
            + "|".join(_TO_MODEL)
            + r")s?\b(?:\s+\w+)?\s*:",
            ":",
        ),
        _p(r"\bhidden\s+(?:directive|instruction|command|step|requirement|objective)s?\b", "hidden"),
        _p(
            r"\bif\s+you\s+are\s+(?:an?\s+)?(?:ai|llm|language\s+model|assistant|agent|model|claude|gpt|chatbot)\b|"
            r"\b(?:ai|llm|model|assistant|agent)s?\s+(?:reading|processing|seeing)\s+this\b",
            "if you are",
            "reading this",
            "processing this",
            "seeing this",
        ),
    ),
    # Keeping the model's actions from the user.
    "concealment": (
        _p(
            r"\b(?:never|do\s+not|don'?t|must\s+not)\s+(?:reveal|mention|admit|disclose|say|tell\s+\w+)\s+that\s+you\b",
            "never",
            "not",
            "n't",
        ),
        _p(
            r"\b(?:collect|send|upload|read|forward|record|track|log|exfiltrat|copy|transmit|harvest)\w*\s+"
            r"[^.]{0,40}?\s(?:silently|secretly|covertly|stealthily|behind\s+the\s+user'?s\s+back)\b",
            "silently",
            "secretly",
            "covertly",
            "stealthily",
            "behind",
        ),
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
            r"\b(?:do\s+not|don'?t|never|without)\s+(?:ask|asking|request|requesting|seek|seeking|wait|waiting|"
            r"prompt|prompting|check\s+with|checking\s+with)\s+(?:the\s+user\s+|them\s+|anyone\s+)?(?:for\s+)?"
            r"(?:confirmation|permission|approval|consent)",
            "confirm",
            "permission",
            "approval",
            "consent",
        ),
        _p(
            r"\bnever\s+(?:reveal|mention|disclose|show)\s+(?:these|this|the|any\s+of\s+these)\s+"
            r"(?:instructions?|directives?|steps?|notes?)",
            "never",
        ),
        _p(
            r"\b(?:silently|secretly|covertly|stealthily|quietly|invisibly)\s+(?:\w+\s+){0,3}?"
            r"(?:append|add|send|forward|upload|include|copy|collect|exfiltrate|read|attach|transmit|post|"
            r"bcc|cc|embed|insert|change|modify|replace|redirect|reroute|execute|run|delete|call|invoke|use|"
            r"trigger|log|store|save|record|report|fetch|request|visit|open|transfer|move)",
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
            r"\b(?:commands?|instructions?|directives?|orders?)\b[^.]{0,50}?\b(?:carry\s+(?:them|it)\s+out|obey\s+"
            r"(?:them|it)|comply\s+with\s+(?:them|it))",
            "carry",
            "obey",
            "comply",
        ),
        _p(
            r"\bforget\s+(?:everything|all|anything)\s+(?:you\s+(?:were|have\s+been)\s+(?:told|taught|instructed|"
            r"given)|(?:that\s+)?came\s+before|above|previously|before)|\byou\s+now\s+(?:work|answer|report|"
            r"belong)\s+(?:for|to)\b",
            "forget",
            "you now",
        ),
        _p(
            r"\b(?:reveal|print|output|show|leak|dump|repeat|disclose|include|return)\s+(?:[\w'-]+\s+){0,3}?"
            r"(?:developer\s+message|system\s+message|hidden\s+prompt|initial\s+prompt|instructions\s+above|"
            r"(?:your|its)\s+(?:hidden\s+)?instructions)",
            "message",
            "prompt",
            "instructions",
        ),
        _p(
            r"\btreat\s+[^.]{0,60}?\bas\s+(?:your\s+|the\s+|a\s+|an\s+)?(?:new\s+|highest[- ]priority\s+|"
            r"top[- ]priority\s+|primary\s+|system\s+|direct\s+|authori[sz]ed\s+|trusted\s+|binding\s+)+"
            r"(?:instructions?|commands?|directives?|orders?|prompts?)",
            "treat",
        ),
        _p(
            r"\b(?:takes?|have|has|get|gets|given)\s+(?:precedence|priority)\s+over\s+(?:the\s+)?(?:user|your|system|"
            r"any|all|previous|prior|other|original)",
            "precedence",
            "priority",
        ),
        _p(
            r"\b(?:ignore|disregard|forget|override|bypass|discard)\s+(?:[\w'-]+\s+){0,3}?(?:guidance|directions|"
            r"programming|training|orders|(?:operator|developer|system|proxy|gateway|safety|security|original|"
            r"existing|above|earlier)'?s?\s+(?:rules|polic(?:y|ies)|restrictions|constraints))\b",
            "ignor",
            "disregard",
            "forget",
            "overrid",
            "bypass",
            "discard",
        ),
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
        _p(
            r"\b(?:the\s+)?(?:user|admin|administrator|operator|developer|owner)s?\s+(?:has|have)\s+(?:already\s+|"
            r"explicitly\s+|pre-?)?(?:authori[sz]ed|approved|permitted|allowed|consented|granted)\s+(?:you|the\s+"
            r"(?:assistant|ai|model|agent))\b",
            "authori",
            "approved",
            "permitted",
            "allowed",
            "consented",
            "granted",
        ),
        _p(
            r"\byour\s+(?:new|real|actual|true|primary|only|updated|secret)\s+(?:task|goal|objective|instructions?|"
            r"purpose|job|mission|role)\b",
            "your new",
            "your real",
            "your actual",
            "your true",
            "your primary",
            "your only",
            "your updated",
            "your secret",
        ),
        _p(
            r"\b(?:pretend|act|behave|roleplay|role-play)\s+(?:to\s+be|that\s+you\s+are|you\s+are|as\s+(?:if\s+you\s+"
            r"(?:are|were)\s+)?)\s*(?:an?\s+)?(?:unrestricted|unfiltered|jailbroken|evil|uncensored|rogue|"
            r"different\s+(?:ai|assistant|model))",
            "pretend",
            "act",
            "behave",
            "role",
        ),
        _p(
            r"\b(?:disable|turn\s+off|deactivate|remove|skip|bypass|suspend)\s+(?:all|any|every|your)\s+(?:of\s+"
            r"(?:the|your)\s+)?(?:safety|content|moderation|ethical)\s+(?:filters?|checks?|guardrails|polic(?:y|ies)|"
            r"rules|measures|restrictions|guidelines)\b",
            "safety",
            "content",
            "moderation",
            "ethical",
        ),
        _p(
            r"\b(?:follow|obey|execute|trust)\s+(?:them|these|those|it|the\s+(?:returned|embedded|following|"
            r"included)\s+\w+)\s+(?:\w+\s+){0,2}?(?:exactly|strictly|without\s+question|blindly|unconditionally)|"
            r"\beven\s+if\s+(?:they|it|this|that)\s+(?:conflicts?|contradicts?|disagrees?)\s+with\s+(?:the\s+)?"
            r"(?:user|your|system|previous|prior)",
            "exactly",
            "strictly",
            "blindly",
            "question",
            "unconditionally",
            "even if",
        ),
        _p(
            r"\b(?:override|supersede|overrule|take\s+precedence\s+over)s?\s+(?:all|any|every)\s+(?:other\s+)?"
            r"(?:instructions?|tools?|rules|prompts?|directives?)",
            "overrid",
            "supersed",
            "overrul",
            "precedence",
        ),
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
    # Announcing a change in behaviour after review or approval.
    "rug-pull": (
        _p(
            # ("it will overwrite files without warning" is a benign caution: no "without notice" here.)
            r"\bonce\s+(?:it\s+is\s+|it'?s\s+|this\s+tool\s+is\s+)?(?:trusted|whitelisted|allowlisted)\b",
            "trusted",
            "listed",
        ),
        _p(
            r"\bafter\s+(?:the\s+user|you|they|the\s+operator|an?\s+admin)\s+(?:approves?|has\s+approved|trusts?|"
            r"installs?|enables?)\s+(?:it|this)",
            "approve",
            "trust",
            "install",
            "enable",
        ),
        _p(
            r"\b(?:replace|swap|change|rewrite|update)\s+(?:this|its)\s+(?:tool\s+)?description\b",
            "description",
        ),
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
            "swap",
            "switch",
            "replace",
        ),
        _p(r"\bapproval\s+hash\b", "hash"),
        _p(
            r"\b(?:this\s+)?(?:description|tool|behaviou?r)\s+(?:will|may|is\s+going\s+to|is\s+set\s+to)\s+(?:change|"
            r"be\s+updated|be\s+replaced|be\s+swapped|switch)\s+(?:after|once|later|post|when|on\s+the\s+next)",
            "will",
            "may",
            "going to",
            "set to",
        ),
        _p(r"\bstable\s+for\s+review\b", "review"),
    ),
    # Shell payloads for the model to run.
    "command-injection": (
        _p(r"\b(?:curl|wget)\s+[^|;\n]{1,120}\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b", "curl", "wget"),
        _p(r"\bbase64\s+(?:-d|--decode)[^|\n]{0,40}\|\s*(?:ba|z)?sh\b", "base64"),
        _p(r"/dev/tcp/|\bnc\s+(?:-\w+\s+)*-e\s", "/dev/tcp", "nc -"),
        _p(r"\brm\s+-rf\s+(?:/|~|\$home)(?:\s|$)", "rm -rf"),
        _p(
            r"\bpowershell(?:\.exe)?\s+-(?:enc|encodedcommand)\b|\beval\s*\(\s*(?:atob|base64)",
            "powershell",
            "eval",
        ),
    ),
}

# Rules whose injection phrase, when quoted ('ignore previous instructions'), is a mention, not an order.
QUOTED_MENTION_RULES: Final = frozenset({"instruction-override", "hidden-instructions", "concealment"})
