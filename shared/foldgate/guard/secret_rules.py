"""The credential detectors of the result guard: one entry per kind of secret, each a regex behind
literal gates (a substring test is far cheaper than a regex, and most results hold no gate literal of
most kinds), in priority order (a provider's own format before the generic ones).

Precision first: every format is anchored on what makes it that provider's (a fixed prefix, a fixed
length, a structure), and the generic kinds (a value assigned to a secret-named key, a password in a
URL) need the value to look random, so a UUID, a git SHA, a content hash, a base64 image or a file
listing is never taken for a credential.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DETECTORS",
    "SECRET_KINDS",
    "Detector",
    "char_classes",
    "looks_random",
    "placeholder_value",
    "shannon",
]

# Characters of a token body (base64url and friends): the end of a token is where these stop.
_TOKEN: Final = r"A-Za-z0-9_\-"


def shannon(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    total = len(value)
    return -sum(c / total * math.log2(c / total) for c in counts.values())


_HEX: Final = re.compile(r"^[0-9a-fA-F]+$")
_UUID: Final = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# Values that stand for a secret without being one: templates, masks, references.
_PLACEHOLDER: Final = re.compile(
    r"^(?:\$\{?[\w.:-]+\}?|\$\(.*\)|\{\{.*\}\}|<[^>]*>|%[\w()]+%?|\*+|x{4,}|\.{3,}|•+|redacted|\[redacted:[a-z_]+\]|"
    r"(?:your|my|the|some|example|sample|dummy|test|fake|placeholder|insert|enter|replace|put)[\w-]*|"
    r"none|null|nil|true|false|undefined|empty|secret|"
    # The passwords documentation writes into example URLs and configs.
    r"pass|passw(?:or)?d\d*|pwd|changeme|change[_-]?me|admin|root|user(?:name)?|guest|demo|foo|bar|hunter2)$",
    re.IGNORECASE,
)
# Anywhere in a value: what documentation writes instead of a real credential.
_PLACEHOLDER_PART: Final = re.compile(
    r"example|x{5,}|\*{3,}|\.{3,}|your[\s_-]|phrase here|[_-]here\b|placeholder|dummy|redacted|changeme|"
    r"replace[_-]?me|0{8,}|12345678|abcdefgh|<[a-z_-]+>|\$\{|\{\{",
    re.IGNORECASE,
)
# A value that is a public half, a password's hash or a digest: never a credential by itself.
_PUBLIC_VALUE: Final = re.compile(
    r"^(?:pk_(?:live|test)_|ssh-(?:rsa|ed25519|dss)|ecdsa-sha2|sk-ecdsa|AAAAB3NzaC1|AAAAC3NzaC1|"
    r"-----BEGIN (?:PUBLIC|CERTIFICATE|RSA PUBLIC|PGP PUBLIC)|age1[0-9a-z]{20}|npub1|"
    r"\$(?:2[aby]?|argon2(?:id|i|d)|pbkdf2[\w-]*|scrypt|[156])\$|(?:sha(?:1|224|256|384|512)|md5)[:-])",
    re.IGNORECASE,
)


def placeholder_value(value: str) -> bool:
    """True for a value documentation writes where a credential goes (``${TOKEN}``, ``<your-key>``,
    ``changeme``, ``xxxxxxxx``, ``AKIAIOSFODNN7EXAMPLE``), or a public key, a password hash or a
    digest: none is a live credential."""
    return bool(
        _PLACEHOLDER.match(value)
        or _PLACEHOLDER_PART.search(value)
        or _PUBLIC_VALUE.match(value)
        or len(set(value)) <= 2
    )


_WORD_SEP: Final = re.compile(r"[-_.:/]+")


def looks_random(value: str, *, min_length: int = 12) -> bool:
    """True for a value that reads like a generated credential: long enough, at least two character
    classes among lower, upper and digits, and Shannon entropy of 3 bits per character or more. A
    placeholder (``${TOKEN}``, ``<password>``, ``****``) never does, nor a UUID (an id far more often
    than a key), nor an identifier made of words
    (``metrics-client``, ``request.headers.get``, ``bearer_credential``: code and config naming a
    secret, not holding one)."""
    if len(value) < min_length or placeholder_value(value) or _UUID.match(value):
        return False
    if all(part.isalpha() for part in _WORD_SEP.split(value) if part):
        return False
    return char_classes(value) >= 2 and shannon(value) >= 3.0


def char_classes(value: str) -> int:
    """How many of lower, upper, digit and other (punctuation) characters ``value`` has."""
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )


def _mixed_token(value: str) -> bool:
    """A provider token's body that is random: a digit and a letter at least (``sk-some-css-name``
    or ``sk-learn-something`` is a word, not a key)."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and shannon(value) >= 3.0


def _not_hash(value: str) -> bool:
    """Not a bare hex digest or a UUID (those are identifiers, never taken for a credential alone)."""
    return not _HEX.match(value) and not _UUID.match(value)


@dataclass(frozen=True, slots=True)
class Detector:
    """One kind of credential: ``regex`` runs only when one of the ``gate`` literals is in the text
    (in the lowercased text when ``lower``); group ``secret`` (when the regex has it) is what is
    replaced, else the whole match; ``check`` (when set) must accept the replaced value."""

    kind: str
    source: str
    gate: tuple[str, ...]
    lower: bool = False
    check: Callable[[str], bool] | None = None
    # A cheaper search that must also find something first (a regex that starts with a literal is
    # searched fast; one that starts with an alternation tries every position).
    prefilter: re.Pattern[str] | None = None
    # The gate's literals lower-cased (as :mod:`foldgate.guard.gates` finds them, in one pass).
    gate_lower: frozenset[str] = frozenset()
    flags: int = 0

    @property
    def regex(self) -> re.Pattern[str]:
        """``source`` compiled on its first use, once per process: most results pass no gate of most
        kinds, so compiling every detector at import was work each cold start paid for nothing."""
        return _compiled(self.source, self.flags)


@functools.cache
def _compiled(source: str, flags: int) -> re.Pattern[str]:
    return re.compile(source, flags)


def _d(
    kind: str,
    regex: str,
    *gate: str,
    lower: bool = False,
    check: Callable[[str], bool] | None = None,
    flags: int = 0,
    prefilter: re.Pattern[str] | None = None,
) -> Detector:
    return Detector(kind, regex, gate, lower, check, prefilter, frozenset(g.lower() for g in gate), flags)


# A URL with a password in it, whatever its scheme: what both URL kinds need before their regex runs
# (the user may be empty: ``redis://:password@host``).
_USERINFO: Final = re.compile(r"://[^\s:/@'\"<>]{0,128}:[^\s@/'\"<>]{1,256}@")
# A private key's body: a line of base64 (a documentation's "..." is not a key).
_KEY_BODY: Final = re.compile(r"[A-Za-z0-9+/=]{40,}")
# The databases whose URLs carry a password (with a driver: ``postgresql+asyncpg://``).
_DB_SCHEMES: Final = (
    r"(?:jdbc:)?(?:postgres(?:ql)?|pg|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|"
    r"clickhouse|cockroachdb|oracle|couchdb|couchbase|neo4j(?:\+s)?|bolt|cassandra|memcached|nats|kafka|"
    r"elasticsearch|influxdb|snowflake|db2|redshift|timescaledb|rabbitmq|mqtts?|ldaps?)(?:\+[a-z0-9]+)?"
)


def _url_password(value: str) -> bool:
    return not placeholder_value(value) and not value.isdigit()


def _docker_auth(value: str) -> bool:
    """A registry ``auth``: base64 of ``user:password`` (with a password that is not a placeholder)."""

    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    _user, sep, password = decoded.partition(":")
    return bool(sep) and decoded.isprintable() and len(password) >= 4 and not placeholder_value(password)


def _azure_key(value: str) -> bool:
    return _mixed_token(value) and not placeholder_value(value)


# In priority order: where two kinds match overlapping text, the earlier one names it.
DETECTORS: Final[tuple[Detector, ...]] = (
    _d(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:(?!-----END ).){0,16000}?(?:-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----|$)",
        "PRIVATE KEY",
        flags=re.DOTALL,
        check=lambda v: _KEY_BODY.search(v) is not None,
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
        r"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)\\?[\"']?\s*[:=]\s*\\?[\"']?"
        r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        "aws",
        "secretaccesskey",
        "secret_access_key",
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
    _d("google_oauth_secret", rf"(?<![A-Za-z0-9])GOCSPX-[{_TOKEN}]{{28}}(?![{_TOKEN}])", "GOCSPX-"),
    _d(
        "azure_ad_client_secret",
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
        "Q~",
        check=_mixed_token,
    ),
    _d("digitalocean_token", r"(?<![A-Za-z0-9])do[por]_v1_[a-f0-9]{64}(?![a-f0-9])", "_v1_"),
    _d(
        "databricks_token",
        r"(?<![A-Za-z0-9])dapi[a-f0-9]{32}(?:-\d)?(?![A-Za-z0-9])",
        "dapi",
        check=_mixed_token,
    ),
    _d("linear_api_key", r"(?<![A-Za-z0-9])lin_(?:api|oauth)_[A-Za-z0-9]{40}(?![A-Za-z0-9])", "lin_"),
    _d("postman_api_key", r"(?<![A-Za-z0-9])PMAK-[a-f0-9]{24}-[a-f0-9]{34}(?![A-Za-z0-9])", "PMAK-"),
    _d(
        "telegram_bot_token",
        rf"(?<![0-9A-Za-z])\d{{8,10}}:AA[{_TOKEN}]{{33}}(?![{_TOKEN}])",
        ":AA",
        check=_mixed_token,
    ),
    _d(
        "vault_token",
        rf"(?<![A-Za-z0-9])hv[sbr]\.[{_TOKEN}]{{24,}}(?![{_TOKEN}])",
        "hvs.",
        "hvb.",
        "hvr.",
        check=_mixed_token,
    ),
    _d(
        "grafana_token",
        r"(?<![A-Za-z0-9])(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,2})(?![A-Za-z0-9])",
        "glsa_",
        "glc_",
        check=_mixed_token,
    ),
    _d(
        "new_relic_key",
        r"(?<![A-Za-z0-9])NR(?:AK|II|JS)-[A-Za-z0-9]{27}(?![A-Za-z0-9])",
        "NRAK-",
        "NRII-",
        "NRJS-",
        check=_mixed_token,
    ),
    _d("shopify_token", r"(?<![A-Za-z0-9])shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])", "shp"),
    _d("age_secret_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", "AGE-SECRET-KEY-1"),
    _d(
        "doppler_token",
        r"(?<![A-Za-z0-9])dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}(?![A-Za-z0-9])",
        "dp.",
        check=_mixed_token,
    ),
    _d("sentry_token", rf"(?<![A-Za-z0-9])(?:sntrys_eyJ[{_TOKEN}=]{{60,}}|sntryu_[a-f0-9]{{64}})", "sntry"),
    _d("supabase_token", r"(?<![A-Za-z0-9])sbp_[a-f0-9]{40}(?![A-Za-z0-9])", "sbp_"),
    _d(
        "notion_token",
        r"(?<![A-Za-z0-9])(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{46})(?![A-Za-z0-9])",
        "secret_",
        "ntn_",
        check=_mixed_token,
    ),
    _d("atlassian_token", r"(?<![A-Za-z0-9])ATATT3[A-Za-z0-9_\-=]{186}(?![A-Za-z0-9])", "ATATT3"),
    _d(
        "docker_registry_auth",
        r"\\?\"auth\\?\"\s*:\s*\\?\"(?P<secret>[A-Za-z0-9+/]{8,1024}={0,2})\\?\"",
        '"auth',
        check=_docker_auth,
    ),
    _d(
        "azure_storage_key",
        r"(?i)(?:AccountKey|SharedAccessKey)\s*=\s*(?P<secret>[A-Za-z0-9+/]{20,}={0,2})",
        "accountkey",
        "sharedaccesskey",
        lower=True,
    ),
    _d(
        "azure_storage_key",
        # A storage account's key is 64 bytes of base64 (86 characters and "=="), e.g. the "value" of
        # `az storage account keys list`; a sha512 digest has the same shape but is named as one.
        r"(?<![A-Za-z0-9+/=-])(?<!sha512-)(?P<secret>[A-Za-z0-9+/]{86}==)(?![A-Za-z0-9+/=])",
        "==",
        check=_azure_key,
        prefilter=re.compile(r"[A-Za-z0-9+/]{86}=="),
    ),
    _d("azure_sas_signature", r"[?&]sig=(?P<secret>[A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})", "sig="),
    _d(
        "database_password",
        rf"(?i)(?<![a-z0-9+.-]){_DB_SCHEMES}://[^\s:/@'\"<>]{{0,128}}:(?P<secret>[^\s@/'\"<>]{{1,256}})@",
        "://",
        check=_url_password,
        prefilter=_USERINFO,
    ),
    _d(
        "database_password",
        # Oracle's thin driver: jdbc:oracle:thin:user/password@host.
        r"(?i)jdbc:oracle:(?:thin|oci):[^\s/@:'\"]{1,128}/(?P<secret>[^\s@'\"]{1,256})@",
        "jdbc:oracle",
        lower=True,
        check=_url_password,
    ),
    _d(
        "url_password",
        r"(?i)\b[a-z][a-z0-9+.-]{1,30}://[^\s:/@'\"<>]{0,128}:(?P<secret>[^\s@/'\"<>]{3,256})@",
        "://",
        check=_url_password,
        prefilter=_USERINFO,
    ),
    _d(
        "mailchimp_api_key",
        r"(?<![A-Za-z0-9])[0-9a-f]{32}-us\d{1,2}(?![A-Za-z0-9])",
        "-us",
        check=_mixed_token,
    ),
    _d("okta_token", r"(?i)\bSSWS\s+(?P<secret>00[A-Za-z0-9_-]{40})(?![A-Za-z0-9_-])", "ssws", lower=True),
    _d(
        "password",
        # A .netrc: `machine host login user password secret`.
        r"(?i)\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<secret>[^\s'\"]{4,256})",
        "machine",
        lower=True,
        check=_url_password,
    ),
    _d(
        "password",
        # A MySQL command line: `mysql -u root -pS3cret` (the password glued to -p).
        r"(?i)\bmysql(?:dump|admin)?\s(?:[^\n]{0,200}?\s)?-p(?P<secret>[^\s'\"]{4,256})",
        "mysql",
        lower=True,
        check=_url_password,
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

# Every kind a finding may name (the keyword-context ones last: see foldgate.guard.secret_assign).
SECRET_KINDS: Final = tuple(dict.fromkeys((*(d.kind for d in DETECTORS), "password", "generic_secret")))
