"""Secrets an upstream ``auth:`` block names: OAuth client secrets and private keys (PEM).

The config holds only a name (``client_secret_secret``, ``private_key_secret``). In the cloud the name
is a SecureString parameter, read like ``headers_secret`` (decrypted by Parameter Store, cached for
``max_age`` seconds). Locally it is a file under the state folder's ``secrets/`` directory, the name's
slashes turned into ``__`` (``/fg/github/secret`` -> ``.foldgate/secrets/fg__github__secret``), so a
value never has to sit in the config file. Values are never logged or echoed in errors.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from foldgate.config.secret_store import local_secret_path
from foldgate.errors import ConfigError, MissingSecretError, StoreError
from foldgate.model.lru import MemoryBudget

__all__ = ["file_secret_reader", "local_secret_path", "sealed_secret_reader", "ssm_secret_reader"]

SecretReader = Callable[[str], Awaitable[str]]


def file_secret_reader(directory: str | Path) -> SecretReader:
    """Secrets from files in ``directory`` (local mode)."""

    async def read(name: str) -> str:
        path = local_secret_path(directory, name)
        try:
            value = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise MissingSecretError(f"secret {name!r} not found: create {path} (mode 0600)") from None
        except OSError as exc:
            raise ConfigError(f"cannot read secret {name!r}: {exc.strerror or exc}") from None
        if not value:
            raise ConfigError(f"secret {name!r} is empty")
        return value

    return read


def ssm_secret_reader(
    *, max_age: float = 300.0, client: Any | None = None, memory: MemoryBudget | None = None
) -> SecretReader:
    """Secrets from SecureString parameters (the cloud), cached ``max_age`` seconds on the instance's
    memory budget."""
    # Powertools Parameters (and boto3) load only in instances whose tenants name such secrets.
    from foldgate.config.ssm import ssm_provider

    # Made by the first secret read, not at every cold start (an SSM client and Powertools Parameters).
    provider = functools.cache(lambda: ssm_provider(client, memory, kind="ssm_client_secret"))
    ttl = max(0, int(max_age))

    def get(name: str) -> str:
        # The exception types load with the provider, in instances that read Parameter Store.
        from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

        try:
            value = provider().get(name, decrypt=True, max_age=ttl)
        except GetParameterError as exc:
            raise ConfigError(f"cannot read secret parameter {name}: {type(exc).__name__}") from None
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"secret parameter {name} is empty or not text")
        return value.strip()

    async def read(name: str) -> str:
        # boto3 blocks: off the event loop, like every other store read on the request path.
        return await asyncio.to_thread(get, name)

    return read


def sealed_secret_reader(sealed: Callable[[str], str | None]) -> SecretReader:
    """Secrets sealed in the table (``SecretStore: table``, :mod:`foldgate.store.secrets_table`):
    ``sealed`` opens one by its full name (None when absent)."""

    def get(name: str) -> str:
        try:
            value = sealed(name)
        except StoreError as exc:
            raise ConfigError(f"cannot read secret {name}: {exc.message}") from None
        if value is None:
            raise MissingSecretError(f"secret {name} not found in the table: foldgate tenant apply sets it")
        if not value.strip():
            raise ConfigError(f"secret {name} is empty")
        return value.strip()

    async def read(name: str) -> str:
        # boto3 and KMS block: off the event loop, like every other store read on the request path.
        return await asyncio.to_thread(get, name)

    return read
