"""Keyword-context credentials: a value assigned to a secret-named key, in every syntax a config or an
export writes it in (the way gitleaks' generic rule and detect-secrets' keyword plugin get their recall):

* ``.env`` / shell / INI / TOML / Java properties: ``DB_PASSWORD=...``, ``export API_KEY="..."``,
  ``db.password = ...``, ``password: ...``;
* YAML and JSON (escaped inside a JSON string too): ``password: ...``, ``"clientSecret": "..."``;
* PHP and Ruby hashes: ``'password' => '...'``; Go: ``token := "..."``;
* PHP ``define('DB_PASSWORD', '...')`` and WordPress salts (``define('AUTH_KEY', '...')``, any
  characters, spaces included);
* XML: ``<password>...</password>`` and ``<add key="ApiKey" value="..."/>``;
* exports that name the key in one field and hold the value in another: Postman's
  ``{"key": "x-api-key", "value": "..."}``, Heroku's config vars;
* connection strings and URL queries: ``Server=...;Password=...;``, ``?user=app&password=...``.

A key is secret-named when it *ends* in a secret's name (``client_secret``, ``apiKey``, ``DB_PASS``,
``NONCE_SALT``: ``token_type`` or ``api_key_id`` does not); pagination handles and counters
(``next_page_token``, ``max_tokens``) never are. The value must then look like a credential: for a
password, at least six characters of two classes or more that are not a placeholder; for any other
secret, a random-looking value (:func:`foldgate.guard.secret_rules.looks_random`) or a UUID under an
API key's name (Heroku's keys are UUIDs). Placeholders (``${VAR}``, ``<your-token>``, ``changeme``,
``xxxx``), public keys, password hashes and digests never are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from foldgate.guard.secret_rules import char_classes, looks_random, placeholder_value, shannon

__all__ = ["GENERIC", "NAME_GATE", "PASSWORD", "assigned_secrets", "credential_value", "secret_name"]

GENERIC: Final = "generic_secret"
PASSWORD: Final = "password"
# Where a secret-named key may be: one of these in the lowercased text opens the search.
NAME_GATE: Final = ("pass", "pwd", "secret", "token", "key", "credential", "salt")
_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_SEP: Final = r"[_.\-]?"
# A secret-named key (lowercased, camelCase folded): what it ends in.
_NAME: Final = re.compile(
    rf"(?:^|[_.\-])pass$|(?:secret|passwords?|passwd|passphrase|pwd|tokens?|credentials?|salt|"
    rf"(?:api|access|secret|private|auth|signing|encryption|encrypt|master|account|storage|subscription|"
    rf"app|client|consumer|shared|session|jwt|webhook|service|admin|deploy|logged{_SEP}in|nonce|hmac|"
    rf"license|sas|cipher|crypt|root|bot|sendgrid|stripe|mailgun|heroku|openai|anthropic|slack|twilio|"
    rf"datadog|dd|algolia|mapbox|firebase|aes|ssh|gpg|pgp|secure{_SEP}auth|x{_SEP}api|cloudflare|"
    rf"instance|server|user|install|registration|enrollment){_SEP}keys?)$"
)
_PASSWORD_NAME: Final = re.compile(r"(?:pass|passwords?|passwd|passphrase|pwd)$")
# Pagination handles, counters, key *ids* and database keys: named like secrets, never one.
_NOT_SECRET_NAME: Final = re.compile(
    rf"(?:page|cursor|continuation|sync|resume|next|continue|pagination|idempotency|cache|partition|sort|"
    rf"row|foreign|object|dedup|lock|event|public|publishable|primary|csrf|xsrf|request|trace|delegation|"
    rf"invite|reset|verification|unsubscribe|share|upload|download|device|push|fcm|apns|prompt|completion|"
    rf"input|output|cached|reasoning|max|min|num|total|estimated|remaining){_SEP}(?:tokens?|keys?)$|"
    rf"^(?:max|min|num|total)"
)
# The assignment after a key: the key's closing quote (escaped inside a JSON string), a separator
# (``=``, ``:``, ``:=``, ``=>``, an XML element's ``>``, an XML ``value=`` attribute, a Postman or
# Heroku export's ``", "value":``), then the value: quoted (to its closing quote: may hold ``#``, ``!``)
# or bare (ending at a space, a quote, a separator or a URL query's ``&``).
_ASSIGN: Final = re.compile(
    r"(?:\\?[\"'])?[ \t]*(?::=|=>|\?=|=|:(?![:/])|>(?=[^<\n]{1,512}</)|"
    r"[ \t]+value[ \t]*=|,[ \t]*\\?[\"']value\\?[\"'][ \t]*:)[ \t]*"
    r"(?:\\\"(?P<esc>[^\"\\\s]{1,512})\\\"|\"(?P<dq>[^\"\\\s]{1,512})\"|'(?P<sq>[^'\\\s]{1,512})'|"
    r"(?P<bare>[^\s\"'`,;&<>\[\]{}()\\]{1,512})(?![^\s\"'`,;&<>\[\]{}()\\]))"
)
# PHP's define() (WordPress' keys and salts hold any printable character, spaces too).
_DEFINE: Final = re.compile(
    r"define\(\s*(?P<q>['\"])(?P<name>[A-Za-z0-9_]{2,64})(?P=q)\s*,\s*(?P<vq>['\"])(?P<value>[^'\"\n]{1,512})(?P=vq)\s*\)"
)
_UUID: Final = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# Names under which a UUID is a key (Heroku's API keys, many SaaS keys) rather than an id.
_UUID_KEY_NAME: Final = re.compile(r"api|secret|heroku|access|auth|licen|subscription")
_WORDS: Final = re.compile(r"[A-Za-z]+(?:[ _.:/-][A-Za-z]+)*")


def _fold(key: str) -> str:
    return key.lower().strip("._-")


def secret_name(key: str) -> bool:
    """Whether ``key`` names a secret (see the module doc)."""
    folded = _fold(key)
    return bool(_NAME.search(folded)) and not _NOT_SECRET_NAME.search(folded)


def _password_value(value: str) -> bool:
    return (
        len(value) >= 6
        and not placeholder_value(value)
        and char_classes(value) >= 2
        and not _WORDS.fullmatch(value)
        and not value.isdigit()
        and shannon(value) >= 2.0
    )


def _secret_value(name: str, value: str, spaces: bool) -> bool:
    if _UUID.match(value):
        return bool(_UUID_KEY_NAME.search(name))
    # A salt or a key of any printable characters (WordPress' salts): long and random.
    long_random = len(value) >= 16 and char_classes(value) >= 3 and shannon(value) >= 3.5
    if long_random and (spaces or " " not in value) and not placeholder_value(value):
        return True
    return looks_random(value, min_length=8)


def credential_value(name: str, value: str, *, spaces: bool = False) -> str | None:
    """The kind of a value assigned to the secret-named key ``name`` (``password`` or
    ``generic_secret``), None when the value is no credential; ``spaces``: the value may hold spaces
    (a WordPress salt)."""
    folded = _fold(name)
    if _PASSWORD_NAME.search(folded):
        return PASSWORD if _password_value(value) else None
    return GENERIC if _secret_value(folded, value, spaces) else None


def _keys(text: str, lowered: str) -> Iterator[tuple[int, int]]:
    """The spans of the identifiers holding a gate literal (each once)."""
    seen: set[int] = set()
    for literal in NAME_GATE:
        at = lowered.find(literal)
        while at >= 0:
            end = at + len(literal)
            while end < len(text) and text[end] in _NAME_CHARS:
                end += 1
            start = at
            while start > 0 and at - start < 48 and text[start - 1] in _NAME_CHARS:
                start -= 1
            at = lowered.find(literal, end)
            if end not in seen:
                seen.add(end)
                yield start, end


def assigned_secrets(text: str, lowered: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, kind)`` of every credential assigned to a secret-named key in ``text``
    (``lowered`` is its offset-preserving lowercase)."""
    for start, end in _keys(text, lowered):
        key = text[start:end].rstrip("._-")
        if not secret_name(key):
            continue
        assigned = _ASSIGN.match(text, end)
        if assigned is None:
            continue
        group = next(g for g in ("esc", "dq", "sq", "bare") if assigned.group(g) is not None)
        kind = credential_value(key, assigned.group(group))
        if kind is not None:
            yield assigned.start(group), assigned.end(group), kind
    if "define(" in lowered:
        for match in _DEFINE.finditer(text):
            name, value = match.group("name"), match.group("value")
            if secret_name(name) and (kind := credential_value(name, value, spaces=True)) is not None:
                yield match.start("value"), match.end("value"), kind
