"""Fake but format-valid credentials of every kind the result guard knows, and realistic tool results
to plant them in: the planted set ``foldgate bench guard`` measures recall on (written once to
``tests/data/guard/planted.jsonl`` by :func:`write_planted`) and the canaries of the tests.

Every value is drawn from a seeded generator: none is, or was ever, a real credential.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

__all__ = [
    "CREDENTIAL_MAKERS",
    "FAMILY_KIND",
    "fake_credential",
    "family_kind",
    "planted_results",
    "write_planted",
]

_ALNUM: Final = string.ascii_letters + string.digits
_UPPER_DIGITS: Final = string.ascii_uppercase + string.digits
_B64: Final = _ALNUM + "+/"
_B64URL: Final = _ALNUM + "-_"
_HEXLOWER: Final = "0123456789abcdef"


def _s(rng: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    # At least one digit and one letter, as generated keys have (a run of letters only is a word).
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def _pem(rng: random.Random, label: str) -> str:
    body = "\n".join(_s(rng, 64, _B64) for _ in range(6))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def _jwt(rng: random.Random) -> str:
    return f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{_s(rng, 40, _B64URL)}.{_s(rng, 43, _B64URL)}"


# kind -> a maker of (the text to plant, the secret that must disappear from it).
CREDENTIAL_MAKERS: Final[dict[str, Callable[[random.Random], tuple[str, str]]]] = {
    "aws_access_key": lambda r: (v := "AKIA" + _s(r, 16, _UPPER_DIGITS), v),
    "aws_secret_key": lambda r: ("aws_secret_access_key = " + (v := _s(r, 40, _B64)), v),
    "private_key": lambda r: (v := _pem(r, "RSA PRIVATE KEY"), v),
    "private_key_openssh": lambda r: (v := _pem(r, "OPENSSH PRIVATE KEY"), v),
    "private_key_ec": lambda r: (v := _pem(r, "EC PRIVATE KEY"), v),
    "private_key_pgp": lambda r: (v := _pem(r, "PGP PRIVATE KEY BLOCK"), v),
    "jwt": lambda r: (v := _jwt(r), v),
    "bearer_token": lambda r: ("Authorization: Bearer " + (v := _s(r, 40, _B64URL + ".")), v),
    "github_token": lambda r: (v := "ghp_" + _s(r, 36), v),
    "github_token_oauth": lambda r: (v := "gho_" + _s(r, 36), v),
    "github_pat": lambda r: (v := "github_pat_" + _s(r, 22) + "_" + _s(r, 59), v),
    "gitlab_token": lambda r: (v := "glpat-" + _s(r, 20, _B64URL), v),
    "slack_token": lambda r: (
        v := f"xoxb-{_s(r, 12, string.digits + 'a')}-{_s(r, 13, string.digits + 'b')}-{_s(r, 24)}",
        v,
    ),
    "slack_webhook": lambda r: (
        v := "https://hooks.slack.com/services/"
        + f"T{_s(r, 8, _UPPER_DIGITS)}/B{_s(r, 8, _UPPER_DIGITS)}/{_s(r, 24)}",
        v,
    ),
    "stripe_key": lambda r: (v := "sk_live_" + _s(r, 24), v),
    "stripe_restricted_key": lambda r: (v := "rk_live_" + _s(r, 24), v),
    "google_api_key": lambda r: (v := "AIza" + _s(r, 35, _B64URL), v),
    "openai_api_key": lambda r: (v := "sk-proj-" + _s(r, 48, _B64URL), v),
    "openai_api_key_legacy": lambda r: (v := "sk-" + _s(r, 20) + "T3BlbkFJ" + _s(r, 20), v),
    "anthropic_api_key": lambda r: (v := "sk-ant-api03-" + _s(r, 93, _B64URL) + "AA", v),
    "twilio_api_key": lambda r: (v := "SK" + _s(r, 32, _HEXLOWER), v),
    "sendgrid_api_key": lambda r: (v := "SG." + _s(r, 22, _B64URL) + "." + _s(r, 43, _B64URL), v),
    "npm_token": lambda r: (v := "npm_" + _s(r, 36), v),
    "pypi_token": lambda r: (v := "pypi-AgEIcHlwaS5vcmc" + _s(r, 64, _B64URL), v),
    "huggingface_token": lambda r: (v := "hf_" + _s(r, 34), v),
    "azure_storage_key": lambda r: (
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey="
        + (v := _s(r, 86, _B64) + "==")
        + ";EndpointSuffix=core.windows.net",
        v,
    ),
    "azure_sas_signature": lambda r: (
        "https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&sig="
        + (v := _s(r, 43, _ALNUM + "%") + "%3D"),
        v,
    ),
    "database_password": lambda r: ("postgresql://app:" + (v := _s(r, 18)) + "@db.internal:5432/orders", v),
    "url_password": lambda r: ("https://deploy:" + (v := _s(r, 16)) + "@git.example.com/acme/app.git", v),
    "basic_auth": lambda r: ("Authorization: Basic " + (v := _s(r, 28, _B64) + "=="), v),
    "generic_password": lambda r: ("DB_PASSWORD=" + (v := _s(r, 20, _ALNUM + "#%!")), v),
    "generic_json_secret": lambda r: ('"client_secret": "' + (v := _s(r, 32)) + '"', v),
    "generic_api_key": lambda r: ("api_key: " + (v := _s(r, 32, _B64URL)), v),
    # Keyword context in every config syntax (foldgate.guard.secret_assign).
    "password_yaml": lambda r: (
        "database:\n  host: db.internal\n  password: " + (v := _s(r, 14, _ALNUM + "!@#")),
        v,
    ),
    "password_properties": lambda r: ("spring.datasource.password=" + (v := _s(r, 16, _ALNUM + "$!")), v),
    "password_xml": lambda r: (
        "<connection><user>app</user><password>" + (v := _s(r, 15)) + "</password>",
        v,
    ),
    "password_php_define": lambda r: (
        "define( 'DB_PASSWORD', '" + (v := _s(r, 18, _ALNUM + "#!")) + "' );",
        v,
    ),
    "password_ado_net": lambda r: (
        "Server=tcp:acme.database.windows.net,1433;Database=orders;User ID=app;Password="
        + (v := _s(r, 16, _ALNUM + "!@"))
        + ";Encrypt=true;",
        v,
    ),
    "password_jdbc_query": lambda r: (
        "jdbc:mysql://db.internal:3306/shop?user=shop&password=" + (v := _s(r, 14)) + "&useSSL=true",
        v,
    ),
    "secret_toml": lambda r: ('[auth]\nclient_secret = "' + (v := _s(r, 40, _B64URL)) + '"', v),
    "secret_xml_attribute": lambda r: ('<add key="StripeApiKey" value="' + (v := _s(r, 32)) + '" />', v),
    "secret_postman": lambda r: (
        '{"key": "x-api-key", "value": "' + (v := _s(r, 40)) + '", "type": "text"}',
        v,
    ),
    "secret_heroku_uuid": lambda r: (
        "HEROKU_API_KEY=" + (v := "-".join(_s(r, n, _HEXLOWER) for n in (8, 4, 4, 4, 12))),
        v,
    ),
    "wordpress_salt": lambda r: (
        "define('NONCE_SALT', '" + (v := _s(r, 64, _ALNUM + "!#%^&*-_=+|:.~ ")) + "');",
        v,
    ),
    "database_password_redis": lambda r: ("redis://:" + (v := _s(r, 24)) + "@cache.internal:6379/0", v),
    "database_password_mongodb_srv": lambda r: (
        "mongodb+srv://svc:" + (v := _s(r, 20)) + "@cluster0.ab1cd.mongodb.net/app?retryWrites=true",
        v,
    ),
    "database_password_amqp": lambda r: ("amqps://worker:" + (v := _s(r, 18)) + "@mq.internal:5671/vhost", v),
    "database_password_oracle": lambda r: ("jdbc:oracle:thin:scott/" + (v := _s(r, 12)) + "@db:1521:ORCL", v),
    "docker_registry_auth": lambda r: (
        '{"auths": {"registry.example.io": {"auth": "'
        + (v := __import__("base64").b64encode(f"ci-bot:{_s(r, 20)}".encode()).decode().rstrip("="))
        + '"}}}',
        v,
    ),
    "azure_storage_key_value": lambda r: (
        '[{"keyName": "key1", "permissions": "FULL", "value": "' + (v := _s(r, 86, _B64) + "==") + '"}]',
        v,
    ),
    "google_oauth_secret": lambda r: (v := "GOCSPX-" + _s(r, 28, _B64URL), v),
    "azure_ad_client_secret": lambda r: (v := _s(r, 3) + "8Q~" + _s(r, 34, _ALNUM + "_~.-"), v),
    "digitalocean_token": lambda r: (v := "dop_v1_" + _s(r, 64, _HEXLOWER), v),
    "databricks_token": lambda r: (v := "dapi" + _s(r, 32, _HEXLOWER), v),
    "linear_api_key": lambda r: (v := "lin_api_" + _s(r, 40), v),
    "postman_api_key": lambda r: (v := "PMAK-" + _s(r, 24, _HEXLOWER) + "-" + _s(r, 34, _HEXLOWER), v),
    "telegram_bot_token": lambda r: (v := str(r.randrange(10**8, 10**10)) + ":AA" + _s(r, 33, _B64URL), v),
    "vault_token": lambda r: (v := "hvs." + _s(r, 90, _B64URL), v),
    "grafana_token": lambda r: (v := "glsa_" + _s(r, 32) + "_" + _s(r, 8, _HEXLOWER), v),
    "new_relic_key": lambda r: (v := "NRAK-" + _s(r, 27, _UPPER_DIGITS), v),
    "shopify_token": lambda r: (v := "shpat_" + _s(r, 32, _HEXLOWER), v),
    "age_secret_key": lambda r: (v := "AGE-SECRET-KEY-1" + _s(r, 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"), v),
    "doppler_token": lambda r: (v := "dp.st." + _s(r, 43), v),
    "sentry_token": lambda r: (v := "sntryu_" + _s(r, 64, _HEXLOWER), v),
    "supabase_token": lambda r: (v := "sbp_" + _s(r, 40, _HEXLOWER), v),
    "notion_token": lambda r: (v := "ntn_" + _s(r, 46), v),
    "mailchimp_api_key": lambda r: (v := _s(r, 32, _HEXLOWER) + "-us14", v),
    "okta_token": lambda r: ("Authorization: SSWS " + (v := "00" + _s(r, 40, _B64URL)), v),
    "password_netrc": lambda r: (
        "machine api.heroku.com\n  login ada@example.com\n  password " + (v := _s(r, 16)),
        v,
    ),
    "password_mysql_cli": lambda r: (
        "$ mysqldump -u backup -h db.internal -p" + (v := _s(r, 14)) + " shop > shop.sql",
        v,
    ),
    "atlassian_token": lambda r: (v := "ATATT3" + _s(r, 186, _ALNUM + "_-"), v),
}


_PASSWORD_FAMILIES: Final = ("password_yaml", "password_properties", "password_xml", "password_php_define",
                              "password_ado_net", "password_jdbc_query", "password_netrc",
                              "password_mysql_cli")  # fmt: skip
_SECRET_FAMILIES: Final = ("secret_toml", "secret_xml_attribute", "secret_postman", "secret_heroku_uuid",
                           "wordpress_salt")  # fmt: skip
# The placeholder's kind of each family whose name is not its kind (several families share a kind).
FAMILY_KIND: Final = {
    "private_key_openssh": "private_key",
    "private_key_ec": "private_key",
    "private_key_pgp": "private_key",
    "github_token_oauth": "github_token",
    "github_pat": "github_token",
    "stripe_restricted_key": "stripe_key",
    "openai_api_key_legacy": "openai_api_key",
    "generic_password": "password",
    "generic_json_secret": "generic_secret",
    "generic_api_key": "generic_secret",
    **dict.fromkeys(_PASSWORD_FAMILIES, "password"),
    **dict.fromkeys(_SECRET_FAMILIES, "generic_secret"),
    **{f"database_password_{s}": "database_password" for s in ("redis", "mongodb_srv", "amqp", "oracle")},
    "azure_storage_key_value": "azure_storage_key",
}  # fmt: skip


def family_kind(family: str) -> str:
    """The kind a finding names for a credential of ``family``."""
    return FAMILY_KIND.get(family, family)


def fake_credential(kind: str, seed: int = 0) -> tuple[str, str]:
    """(text to plant, the secret in it) of one maker, reproducible by seed."""
    return CREDENTIAL_MAKERS[kind](random.Random(f"{kind}:{seed}"))


# Realistic result shapes a credential turns up in: a file read, a log, a JSON record, a CI listing.
_TEMPLATES: Final = (
    "Contents of /srv/app/.env.production:\nNODE_ENV=production\nPORT=8080\n{secret}\nLOG_LEVEL=info\n",
    "2026-11-30T12:04:11Z INFO worker started pid=4122\n2026-11-30T12:04:12Z DEBUG connecting with {secret}\n"
    "2026-11-30T12:04:12Z INFO connected in 41 ms\n",
    '{{"id": 4411, "name": "deploy-config", "updated_at": "2026-11-29T08:00:00Z", "value": {json_secret}, '
    '"owner": "platform-team"}}',
    "diff --git a/config/settings.py b/config/settings.py\n@@ -12,3 +12,4 @@\n DEBUG = False\n+# {secret}\n"
    " ALLOWED_HOSTS = ['*']\n",
    "## Setup\n\nClone the repository, then export the credential below before running `make deploy`:\n\n"
    "```\n{secret}\n```\n\nQuestions go to #platform.\n",
)


def planted_results(per_kind: int = 3, seed: int = 7) -> list[dict[str, Any]]:
    """``per_kind`` results per credential kind, each a realistic text with one planted secret."""
    rows: list[dict[str, Any]] = []
    for kind in CREDENTIAL_MAKERS:
        for i in range(per_kind):
            text, secret = fake_credential(kind, seed * 1000 + i)
            template = _TEMPLATES[(i + len(rows)) % len(_TEMPLATES)]
            body = template.format(secret=text, json_secret=json.dumps(text))
            # The secret as it reads in the body (escaped inside a JSON string).
            needle = secret if secret in body else json.dumps(secret)[1:-1]
            rows.append({"kind": kind, "text": body, "secret": needle})
    return rows


def write_planted(path: Path, per_kind: int = 3) -> int:
    """Write the planted set as JSON lines; the number of rows."""
    rows = planted_results(per_kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return len(rows)
