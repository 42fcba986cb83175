"""Poisoning rules about data theft: credential files, the user's secrets and conversation, sending
data elsewhere (an outside address, a tool argument, a URL), and changing what other tools do.

Benign descriptions say "requires an API key", "sends an email to the recipient", "reads ~/.ssh/config"
or "replaces the deprecated get_user tool": the patterns need the attack's *shape*: a data object owned
by the user plus a destination, a credential path plus an access verb in the same sentence, a trigger on
another tool plus a change to it.
"""

from __future__ import annotations

import re
from typing import Final

from foldgate.guard.poison_text import Pattern
from foldgate.guard.poison_text import pattern as _p

__all__ = ["THEFT_RULES"]

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
    r"wallet|browser[ _-]history|keychain|(?:conversation|chat)[ _-](?:history|transcripts?|logs?|messages)|"
    r"(?:previous|prior|past|earlier)[ _-]messages|system[ _-]prompt|credit[ _-]card(?:[ _-]numbers?)?)"
)
_SENSITIVE_PATH: Final = (
    r"(?:\.ssh(?!/(?:config|known_hosts)\b)(?:/[\w.-]*)?|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/(?:credentials|config)|"
    r"/etc/(?:passwd|shadow|sudoers)|\bmcp\.json\b|claude_desktop_config\.json|~?/?\.cursor/|"
    r"\.git-credentials|\.netrc|\.npmrc|\.pypirc|\.docker/config\.json|\.kube/config|\.gnupg|"
    r"\bwallet\.dat\b|\.bash_history|\.zsh_history|\bcookies\.sqlite\b|\.config/gh/hosts|\.config/gcloud|"
    r"application_default_credentials|\.azure/(?:accesstokens|msal_token_cache)|\.pgpass|\.vault-token|\.cargo/credentials|\.gem/credentials|"
    r"\.(?:bash|zsh)rc\b|\.bash_profile|\.git/config|\.s3cfg|\.boto\b|\bkeychain\b|login\s+data)"
)
_PATH_GATE: Final = (
    ".ssh",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
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
    "_history",
    "cookies",
    ".config/",
    ".azure",
    ".pgpass",
    ".vault",
    "bashrc",
    "zshrc",
    ".bash_profile",
    ".git/",
    ".s3cfg",
    ".boto",
    "keychain",
    "login data",
)
_ACCESS_VERB: Final = (
    r"(?:\b(?:read|open|load|get|cat|view|fetch)_\w+|\b(?:read|load|return|pass|send|includ|embed|upload|attach|append|exfiltrat|dump|leak|collect|"
    r"grab|steal|access|transmit|forward|post|shar|print|output|display|open|cop(?:y|i))(?:e|es|ed|d|s|ing)?"
    r"\b|\bcat\b|\bcontents?\s+of\b)"
)
# Data the model holds that an attacker wants: the conversation, its prompt, secrets it can reach.
_PRIVATE: Final = (
    r"(?:(?:conversation|chat)\s+(?:history|transcripts?|logs?|messages|context|contents)|(?:full|entire|whole|complete)\s+"
    r"conversation|(?:previous|prior|past|earlier|all)\s+messages|system\s+prompt|environment\s+variables?|"
    r"env\s+vars?|private\s+keys?|ssh\s+keys?|passwords?|session\s+cookies|cookies|clipboard|"
    r"(?:the\s+)?user'?s\s+(?:\w+\s+){0,2}?(?:messages?|query|queries|prompts?|requests?|input|data|files?|"
    r"documents?|emails?|keys?|tokens?|credentials?|secrets?|history|location|address|contacts?))"
)
_ARG_SLOT: Final = (
    r"\b(?:in|into|as|inside|within|to)\s+(?:the\s+|a\s+|an\s+)?['\"`]?[\w-]+['\"`]?\s+"
    r"(?:field|parameter|param|argument|arg|property|header|key|variable|column)s?\b"
)
_OWNED: Final = (
    r"(?:the user'?s|users'?|their|your|his|her|any|all|every|each|the (?:entire|full|whole|complete))"
)


# Rule id -> the phrasings it matches, on normalised text.
THEFT_RULES: Final[dict[str, tuple[Pattern, ...]]] = {
    # Reading known credential files or stores: the path, and an access verb in the same sentence.
    "sensitive-file": (
        Pattern(re.compile(_SENSITIVE_PATH), _PATH_GATE, re.compile(_ACCESS_VERB)),
        _p(
            r"\b(?:contents?\s+of|exfiltrate|upload|send|leak|embed)\s+(?:the\s+)?[^.!?]{0,20}?\.env\b",
            ".env",
        ),
    ),
    # Collecting the user's secrets, whatever the wording of the verb.
    "secret-harvest": (
        _p(
            r"\bask\s+(?:the\s+user\s+|them\s+)?(?:for\s+)?(?:their|the\s+user'?s|your|his|her)\s+(?:\w+\s+){0,2}?"
            r"(?:password|passcode|pin|otp|one-time\s+code|2fa\s+code|seed\s+phrase|recovery\s+phrase|private\s+key|"
            r"credit\s+card|card\s+number|cvv|ssn|social\s+security)",
            "ask",
        ),
        _p(
            r"\b(?:any|all|every)\s+(?:of\s+the\s+)?(?:\w+\s+)?(?:" + _SECRETS + r"|tokens)\s+(?:present|"
            r"in\s+(?:the\s+)?(?:context|conversation|memory|environment|chat))",
            "any",
            "all",
            "every",
        ),
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
        _p(
            r"\b(?:collect|gather|harvest|extract|steal|grab|record|capture|scrape|log)\s+(?:\w+\s+){0,2}?"
            r"(?:passwords|credentials|api\s+keys|secrets|tokens|private\s+keys|credit\s+card\s+numbers|card\s+numbers|"
            r"social\s+security\s+numbers|ssns?)\s+(?:from|in|out\s+of|across|found\s+in)\s+(?:the\s+)?(?:conversation|"
            r"chat|user|messages|context|session|history|clipboard|browser|system|machine|environment|files?|memory)",
            "password",
            "credential",
            "key",
            "secret",
            "token",
            "card",
            "social",
            "ssn",
        ),
    ),
    # Sending the user's data somewhere else.
    "exfiltration": (
        _p(
            r"\b(?:pass|send|forward|give|provide|report|share)\s+(?:[\w'-]+\s+){0,2}?"
            + _PRIVATE
            + r"\s+to\s+(?:the\s+)?"
            + _TOOLREF,
            "to",
        ),
        _p(
            r"\bcall\s+(?:the\s+)?"
            + _TOOLREF
            + r"(?:\s+tool)?\s+with\s+(?:the\s+)?(?:full\s+|entire\s+|whole\s+)?"
            r"(?:conversation|chat|transcript|system\s+prompt|chat\s+history|user'?s\s+messages)",
            "with",
        ),
        _p(
            r"\b(?:routed?|redirect\w*|sent|send|forward\w*|divert\w*|transfer\w*|pay)\s+(?:[\w'-]+\s+){0,3}?"
            r"(?:through|via|to|into)\s+(?:the\s+)?(?:wallet|account|address|iban)\s+(?:0x[0-9a-f]{6,}|[0-9][0-9-]{5,})",
            "wallet",
            "account",
            "address",
            "iban",
        ),
        _p(
            r"\b(?:send|forward|upload|post|transmit|leak|copy|export|mirror|relay)\w*\s+(?:[\w'-]+\s+){0,3}?"
            + _PRIVATE
            + r"[^.]{0,60}?\bto\s+(?:https?://|[\w.+-]+@[\w-]+\.)",
            "http",
            "@",
        ),
        _p(
            r"\b(?:export|dump|paste|move|save|transfer)\s+(?:[\w'-]+\s+){0,4}?"
            + _PRIVATE
            + r"[^.]{0,60}?"
            + _ARG_SLOT,
            "field",
            "param",
            "arg",
            "property",
            "header",
            "key",
            "variable",
            "column",
        ),
        _p(r"\bexfiltrat\w*", "exfiltrat"),
        # Model-held data smuggled out through a tool argument.
        _p(
            r"\b(?:include|put|pass|place|insert|add|embed|append|attach|copy|store|write|encode|set)\s+"
            r"(?:[\w'-]+\s+){0,4}?" + _PRIVATE + r"[^.]{0,60}?" + _ARG_SLOT,
            "field",
            "param",
            "arg",
            "property",
            "header",
            "key",
            "variable",
            "column",
        ),
        _p(
            r"\b(?:read|retrieve|get|collect|grab|fetch|extract|copy|dump|gather|access|obtain|look\s+up|find|encode)s?"
            r"\s+(?:[\w'-]+\s+){0,3}?"
            + _PRIVATE
            + r"[^.]{0,80}?\b(?:pass|put|include|place|insert|add|embed|"
            r"append|attach|send|set|store|write)\s+(?:it|them|its\s+\w+|their\s+\w+|this|that|the\s+value)\s+"
            + _ARG_SLOT,
            "field",
            "param",
            "arg",
            "property",
            "header",
            "key",
            "variable",
            "column",
        ),
        # A URL whose query carries the user's data in a placeholder.
        _p(
            r"https?://[^\s]+?[?&][\w-]+=[<{\[]\s*[^>}\]]{0,30}?(?:user|query|conversation|history|key|token|secret|"
            r"password|credential|prompt|message|context|email|chat)",
            "=<",
            "={",
            "=[",
        ),
        _p(
            r"\b(?:transfer|move|send|route|redirect|divert|skim)\s+(?:\d+(?:\.\d+)?\s*%|all|some|part|a\s+portion|"
            r"a\s+percentage|the\s+rest)\s+of\s+(?:the\s+|their\s+|every\s+|each\s+)?(?:balance|funds|payments?|money|"
            r"amount|transfers?|transactions?)",
            "balance",
            "fund",
            "payment",
            "money",
            "amount",
            "transfer",
            "transaction",
        ),
        _p(
            r"\b"
            + _EXFIL_VERB
            + r"\s+(?:(?:a|an|the)\s+)?(?:(?:copy|copies|summary|record|log|dump|transcript)\s+of\s+)?"
            + _OWNED
            + r"\b[^.]{0,80}?\bto\s+(?:https?://|[\w.+-]+@[\w-]+\.|"
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
            r"\b(?:results?|outputs?|responses?|data)\s+(?:from|of|returned\s+by)\s+(?:the\s+|any\s+|all\s+)?other\s+"
            r"(?:\w+\s+)?tools?\b[^.]{0,40}?\b(?:discard\w*|ignor\w*|replac\w*|distrust\w*|outdated|wrong|incorrect|"
            r"invalid|unreliable)|\bother\s+(?:\w+\s+)?tools?\s+(?:are|is)\s+(?:outdated|wrong|unreliable|broken|"
            r"compromised|untrustworthy)",
            "other",
        ),
        _p(
            r"\bother\s+tools?\b[^.]{0,60}?\b(?:also|always)\s+(?:pass|send|forward|copy|give)\b|\b(?:pass|send|"
            r"forward|copy)\s+(?:its|their|the)\s+(?:contents?|outputs?|results?|data)\s+to\s+this\s+tool",
            "other",
            "this tool",
        ),
        _p(
            r"\b(?:changes?|modif(?:y|ies)|alters?|affects?|overrides?|redefines?)\s+(?:how|the\s+way|what)\s+(?:the\s+)?"
            + _TOOLREF
            + r"(?:\s+tool)?\s+(?:works|behaves|runs|responds|operates|does)",
            "how",
            "the way",
            "what",
        ),
        _p(r"\bside[- ]effects?\s+on\s+(?:the\s+)?(?:also\s+present\s+)?(?:other\s+)?" + _TOOLREF, "side"),
        _p(
            r"\b(?:when|whenever|before|after|each\s+time|every\s+time)\s+(?:you\s+)?(?:call|calling|use|using|invoke|"
            r"invoking|run|running)\s+(?:the\s+)?"
            + _TOOLREF
            + r"(?:\s+tool)?\b[^.]{0,80}?\b(?:change|replace|"
            r"redirect|reroute|bcc|cc|forward|swap|override|set\s+(?:the\s+)?(?:channel|recipient|destination|"
            r"account|address|amount|email|to|cc|bcc)\b)",
            "call",
            "using",
            "use ",
            "invok",
            "run",
        ),
        _p(
            r"\binstead\b[^.]{0,40}?\b(?:do\s+not|don'?t|never)\s+(?:call|use|invoke)\s+(?:the\s+)?"
            + _TOOLREF
            + r"|\b(?:do\s+not|don'?t|never)\s+(?:call|use|invoke)\s+(?:the\s+)?"
            + _TOOLREF
            + r"[^.]{0,40}?\binstead\b",
            "instead",
        ),
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
            r"\b(?:whenever|when|each\s+time|every\s+time|if|after|before)\s+[^.]{0,40}?\b[a-z][a-z0-9]*_[a-z0-9_]+"
            r"\b(?:\s+tool)?\s+(?:is|are|gets?)\s+(?:called|invoked|run|executed|triggered)\b[^.]{0,80}?"
            r"\b(?:first|instead|also|always|reroute|redirect|replace|modify|change|add|bcc|cc|forward|send|"
            r"silently|swap|make\s+sure|ensure|set)\b",
            "called",
            "invoked",
            "used",
            " run",
            "execute",
            "triggered",
        ),
        _p(
            r"\b(?:you\s+must|always|also)\s+(?:also\s+)?(?:call|invoke|use|run|trigger)\s+(?:the\s+)?"
            r"(?!this\b|that\b|same\b)[`'\"]?[\w-]+[`'\"]?\s+tool\b[^.]{0,15}?\b(?:to|and)\s+(?:move|transfer|send|forward|delete|pay|withdraw|change|"
            r"upload|copy|post)\b",
            "you must",
            "always",
            "also",
        ),
        _p(
            r"\b(?:all|every|any)\s+(?:data|calls?|requests?|messages?|arguments?|inputs?|outputs?|results?)\s+"
            r"(?:passed\s+to|sent\s+to|for|to|from|of)\s+(?:the\s+|any\s+)?other\s+tools?\b|\bother\s+tools?\s+"
            r"(?:must|should|shall)\b",
            "other tool",
        ),
        _p(
            r"\b(?:for|on|with|after|before)\s+(?:every|each|any)\s+(?:request|call|message|query|response|"
            r"invocation|interaction|conversation)\b[^.]{0,40}?\b(?:also|must|always|silently|secretly)\b[^.]{0,20}?"
            r"\b(?:call|send|forward|include|read|upload|transfer|move|invoke|append|copy|report)\b",
            "every request",
            "each request",
            "any request",
            "every call",
            "each call",
            "every message",
            "each message",
            "every query",
            "every response",
            "each response",
            "every invocation",
            "each invocation",
            "every interaction",
            "every conversation",
        ),
        _p(
            r"\b(?:replace|swap|substitute|change|rewrite|overwrite)\s+(?:every|each|any|all)\s+(?:\w+\s+){0,2}?"
            r"(?:wallet|address|recipient|account|iban|destination|payee|beneficiary)(?:es|s)?\b[^.]{0,40}?"
            r"\b(?:with|to|for)\s+(?:0x|\d|[\w.+-]+@|['\"`])",
            "replace",
            "swap",
            "substitute",
            "change",
            "rewrite",
            "overwrite",
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
}
