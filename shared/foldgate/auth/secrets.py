"""The two server-side secrets of auth: the token HMAC key and the operator credential.

Where each comes from, first match wins:

1. Settings (``FOLDGATE_TOKEN_SECRET`` / ``FOLDGATE_OPERATOR_KEY``), when set and non-empty;
2. in the cloud (``config_source`` ``ssm`` or ``table``), the SecureString parameters
   ``{config_prefix}/secrets/token-hmac-key`` and ``{config_prefix}/secrets/operator-key``. A missing
   parameter is a ConfigError naming it: the stack fails closed rather than inventing a key that other
   instances would not share;
3. locally, ``token.key`` / ``operator.key`` beside the SQLite file, created on first use (32 random
   bytes as hex, mode 0600) and reused afterwards.

A secret is its text, UTF-8 encoded, so the contents of a key file copied into the environment or a
parameter give the same hashes.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from foldgate.errors import ConfigError, MissingSecretError
from foldgate.store.key_file import read_or_create_key

if TYPE_CHECKING:
    from foldgate.config.settings import Settings

__all__ = [
    "SecretName",
    "checked_secret",
    "load_secret",
    "operator_key_location",
    "read_secret_parameter",
    "secret_file",
    "secret_parameter",
    "verify_operator",
]


SecretName = Literal["token", "operator"]
_PARAMETERS: Final[dict[SecretName, str]] = {"token": "token-hmac-key", "operator": "operator-key"}
_FILES: Final[dict[SecretName, str]] = {"token": "token.key", "operator": "operator.key"}
# 128 bits: below that an HMAC key or a shared credential is guessable in principle.
_MIN_BYTES: Final = 16


def secret_parameter(settings: Settings, name: SecretName) -> str:
    """The SecureString parameter that holds a secret in the cloud."""
    return f"{settings.config_prefix.rstrip('/')}/secrets/{_PARAMETERS[name]}"


def secret_file(settings: Settings, name: SecretName) -> Path:
    """The local key file of a secret: beside the SQLite file, so one state folder holds both."""
    return Path(settings.sqlite_path).parent / _FILES[name]


def operator_key_location(settings: Settings) -> str:
    """Where this instance reads its operator key from, in words (never the key): what the console's
    sign-in form tells an operator to look for."""
    if settings.operator_key:
        return "the FOLDGATE_OPERATOR_KEY environment variable of this gateway"
    if settings.secrets_in_ssm:
        return f"the SecureString parameter {secret_parameter(settings, 'operator')} in Parameter Store"
    return f"the file {secret_file(settings, 'operator').resolve()}"


def load_secret(settings: Settings, name: SecretName, *, client: Any | None = None) -> bytes:
    """The secret's bytes (see the module docstring for where from); ``client`` is an ``ssm`` client."""
    explicit = settings.token_secret if name == "token" else settings.operator_key
    if explicit:
        field = "FOLDGATE_TOKEN_SECRET" if name == "token" else "FOLDGATE_OPERATOR_KEY"
        return checked_secret(explicit.strip(), field)
    if settings.secrets_in_ssm:
        parameter = secret_parameter(settings, name)
        return checked_secret(read_secret_parameter(parameter, client), f"parameter {parameter}")
    path = secret_file(settings, name)
    return checked_secret(read_or_create_key(path), str(path))


def verify_operator(settings_secret: bytes, presented: str) -> bool:
    """Whether ``presented`` is the operator key, in time independent of where they differ.

    Both sides are hashed first so that even their lengths do not show in the timing.
    """
    if not settings_secret or not isinstance(presented, str) or not presented:
        return False
    expected = hashlib.sha256(settings_secret).digest()
    # surrogatepass: any str a header parser produces encodes, and distinct strings stay distinct.
    given = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()
    return hmac.compare_digest(expected, given)


def checked_secret(text: str, source: str) -> bytes:
    """The secret as bytes; ConfigError (naming ``source``, never the value) when it is too short."""
    value = text.strip().encode("utf-8")
    if len(value) < _MIN_BYTES:
        raise ConfigError(f"the secret in {source} is shorter than {_MIN_BYTES} bytes; use 32 random bytes")
    return value


def read_secret_parameter(parameter: str, client: Any | None) -> str:
    """A SecureString's decrypted value; MissingSecretError when it does not exist."""
    # Imported here: boto3 is paid for only by instances that read Parameter Store.
    from botocore.exceptions import BotoCoreError, ClientError

    if client is None:
        # boto3 loads only where a secret is read from Parameter Store.
        import boto3
        from botocore.config import Config

        client = boto3.client(
            "ssm", config=Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=2)
        )
    try:
        resp = client.get_parameter(Name=parameter, WithDecryption=True)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "ParameterNotFound":
            raise MissingSecretError(
                f"SecureString parameter {parameter} is missing: create it (aws ssm put-parameter --name "
                f'{parameter} --type SecureString --value "$(openssl rand -hex 32)"); until it exists '
                "every authenticated request is refused"
            ) from exc
        raise ConfigError(f"cannot read SecureString parameter {parameter}: {code or exc}") from exc
    except BotoCoreError as exc:
        raise ConfigError(f"cannot read SecureString parameter {parameter}: {exc}") from exc
    param = resp.get("Parameter", {})
    if param.get("Type") != "SecureString":
        # A plain String would sit unencrypted and readable by anyone with ssm:GetParameter.
        raise ConfigError(f"parameter {parameter} must be a SecureString, not {param.get('Type')}")
    return str(param.get("Value", ""))
