"""The credential detectors of the result guard: one entry per kind of secret, each a regex behind
literal gates (a substring test is far cheaper than a regex, and most results hold no gate literal of
most kinds), in priority order (a provider's own format before the generic ones).

Precision first: every format is anchored on what makes it that provider's (a fixed prefix, a fixed
length, a structure), and the generic kinds (a value assigned to a secret-named key, a password in a
URL) need the value to look random, so a UUID, a git SHA, a content hash, a base64 image or a file
listing is never taken for a credential.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = ["DETECTORS", "SECRET_KINDS", "Detector", "looks_random"]

# Characters of a token body (base64url and friends): the end of a token is where these stop.
_TOKEN: Final = r"A-Za-z0-9_\-"


def _shannon(value: str) -> float:
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    total = len(value)
    return -sum(c / total * math.log2(c / total) for c in counts.values())


_HEX: Final = re.compile(r"^[0-9a-fA-F]+$")
_UUID: Final = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# Values that stand for a secret without being one: templates, masks, references.
_PLACEHOLDER: Final = re.compile(
    r"^(?:\$\{?[\w.:-]+\}?|\{\{.*\}\}|<[^>]*>|%[\w()]+%?|\*+|x{4,}|\.{3,}|•+|redacted|\[redacted:[a-z_]+\]|"
    r"(?:your|my|the|some|example|sample|dummy|test|fake|placeholder)[\w-]*|none|null|true|false|undefined|"
    # The passwords documentation writes into example URLs and configs.
    r"pass|passw(?:or)?d|pwd|secret|changeme|admin|root|user(?:name)?|guest|demo|foo|bar|hunter2)$",
    re.IGNORECASE,
)


_WORD_SEP: Final = re.compile(r"[-_.:/]+")


def looks_random(value: str, *, min_length: int = 12) -> bool:
    """True for a value that reads like a generated credential: long enough, at least two character
    classes among lower, upper and digits, and Shannon entropy of 3 bits per character or more. A
    placeholder (``${TOKEN}``, ``<password>``, ``****``) never does, nor a UUID (an id far more often
    than a key), nor an identifier made of words
    (``metrics-client``, ``request.headers.get``, ``bearer_credential``: code and config naming a
    secret, not holding one)."""
    if len(value) < min_length or _PLACEHOLDER.match(value) or _UUID.match(value):
        return False
    if all(part.isalpha() for part in _WORD_SEP.split(value) if part):
        return False
    classes = (
        any(c.islower() for c in value) + any(c.isupper() for c in value) + any(c.isdigit() for c in value)
    )
    return classes >= 2 and _shannon(value) >= 3.0


def _mixed_token(value: str) -> bool:
    """A provider token's body that is random: a digit and a letter at least (``sk-some-css-name``
    or ``sk-learn-something`` is a word, not a key)."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and _shannon(value) >= 3.0


def _not_hash(value: str) -> bool:
    """Not a bare hex digest or a UUID (those are identifiers, never taken for a credential alone)."""
    return not _HEX.match(value) and not _UUID.match(value)


@dataclass(frozen=True, slots=True)
class Detector:
    """One kind of credential: ``regex`` runs only when one of the ``gate`` literals is in the text
    (in the lowercased text when ``lower``); group ``secret`` (when the regex has it) is what is
    replaced, else the whole match; ``check`` (when set) must accept the replaced value."""

    kind: str
    regex: re.Pattern[str]
    gate: tuple[str, ...]
    lower: bool = False
    check: Callable[[str], bool] | None = None
    # A cheaper search that must also find something first (a regex that starts with a literal is
    # searched fast; one that starts with an alternation tries every position).
    prefilter: re.Pattern[str] | None = None


def _d(
    kind: str,
    regex: str,
    *gate: str,
    lower: bool = False,
    check: Callable[[str], bool] | None = None,
    flags: int = 0,
    prefilter: re.Pattern[str] | None = None,
) -> Detector:
    return Detector(kind, re.compile(regex, flags), gate, lower, check, prefilter)


# A URL with a password in it, whatever its scheme: what both URL kinds need before their regex runs.
_USERINFO: Final = re.compile(r"://[^\s:/@'\"<>]{1,128}:[^\s@/'\"<>]{1,256}@")


# In priority order: where two kinds match overlapping text, the earlier one names it.
DETECTORS: Final[tuple[Detector, ...]] = (
    _d(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:(?!-----END ).){0,16000}?(?:-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----|$)",
        "PRIVATE KEY",
        flags=re.DOTALL,
    ),
    _d(
        "aws_access_key",
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
    ),
    _d(
        "aws_secret_key",
        r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        "aws",
        lower=True,
    ),
    _d(
        "github_token",
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{60,255})"
        r"(?![A-Za-z0-9_])",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
    ),
    _d(
        "gitlab_token",
        rf"(?<![A-Za-z0-9])gl(?:pat|dt|rt|ptt)-[{_TOKEN}]{{20,}}",
        "glpat-",
        "gldt-",
        "glrt-",
        "glptt-",
    ),
    _d(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}",
        "hooks.slack",
    ),
    _d("slack_token", r"(?<![A-Za-z0-9])xox[abposre]-[0-9A-Za-z]{6,}(?:-[0-9A-Za-z]{4,}){1,4}", "xox"),
    _d("stripe_key", r"(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{20,247}", "_live_", "_test_"),
    _d("google_api_key", rf"(?<![A-Za-z0-9])AIza[{_TOKEN}]{{35}}(?![{_TOKEN}])", "AIza"),
    _d("anthropic_api_key", rf"(?<![A-Za-z0-9])sk-ant-(?:api|admin|oat)\d\d-[{_TOKEN}]{{32,}}", "sk-ant-"),
    _d(
        "openai_api_key",
        rf"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:(?:proj|svcacct|admin)-)?[{_TOKEN}]{{20,}}(?![{_TOKEN}])",
        "sk-",
        check=_mixed_token,
    ),
    _d("sendgrid_api_key", rf"(?<![A-Za-z0-9])SG\.[{_TOKEN}]{{22}}\.[{_TOKEN}]{{43}}(?![{_TOKEN}])", "SG."),
    _d("twilio_api_key", r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])", "SK"),
    _d("npm_token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", "npm_"),
    _d("pypi_token", rf"(?<![A-Za-z0-9])pypi-AgE[{_TOKEN}]{{50,}}", "pypi-AgE"),
    _d(
        "huggingface_token",
        r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{34,40}(?![A-Za-z0-9])",
        "hf_",
        check=_mixed_token,
    ),
    _d(
        "azure_storage_key",
        r"(?i)(?:AccountKey|SharedAccessKey)\s*=\s*(?P<secret>[A-Za-z0-9+/]{20,}={0,2})",
        "accountkey",
        "sharedaccesskey",
        lower=True,
    ),
    _d("azure_sas_signature", r"[?&]sig=(?P<secret>[A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})", "sig="),
    _d(
        "database_password",
        r"(?i)\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|"
        r"clickhouse|cockroachdb|oracle|jdbc:[a-z]+)://[^\s:/@'\"<>]{1,128}:(?P<secret>[^\s@/'\"<>]{1,256})@",
        "://",
        check=lambda v: not _PLACEHOLDER.match(v),
        prefilter=_USERINFO,
    ),
    _d(
        "url_password",
        r"(?i)\b(?:https?|ftps?|sftp|ssh|git|smtps?|ldaps?)://[^\s:/@'\"<>]{1,128}:(?P<secret>[^\s@/'\"<>]{3,256})@",
        "://",
        check=lambda v: not _PLACEHOLDER.match(v),
        prefilter=_USERINFO,
    ),
    _d(
        "basic_auth",
        r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<secret>[A-Za-z0-9+/]{12,}={0,2})",
        "basic",
        lower=True,
    ),
    _d("jwt", rf"(?<![{_TOKEN}])eyJ[{_TOKEN}]{{8,}}\.eyJ[{_TOKEN}]{{8,}}\.[{_TOKEN}]{{0,1024}}", "eyJ"),
    _d(
        "bearer_token",
        r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9\-._~+/]{20,}=*)",
        "bearer",
        lower=True,
        check=lambda v: looks_random(v, min_length=20) and _not_hash(v),
    ),
)

# Every kind a finding may name (the generic assignment's last: see foldgate.guard.secrets).
SECRET_KINDS: Final = (*(d.kind for d in DETECTORS), "generic_secret")
