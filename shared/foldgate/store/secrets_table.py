"""Tenant secrets sealed in the single DynamoDB table (``SecretStore: table``; docs/operate.md).

The option to Parameter Store SecureStrings for the secrets ``foldgate tenant apply`` writes (a
server's ``headers_secret``): the same names (``{prefix}/tenants/<t>/secrets/<name>``, so a config
reads alike under either store), each one item ``pk = SECRET#<name>``, ``sk = SECRET`` whose ``sealed``
(B) attribute is the value envelope-encrypted under the stack's KMS key exactly as upstream OAuth grants
are (:class:`foldgate.store.grants.kms.KmsEnvelopeCipher`, encryption context ``["secret", <name>]``:
KMS refuses to unwrap an item's data key for any other name, and AES-GCM authenticates it to it).

Written only by ``foldgate tenant apply`` (and ``foldgate tenant migrate-secrets``), read by the
functions that send the headers. A value is never logged, printed or put in an error.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Collection
from typing import Any, Final

from foldgate.errors import StoreError
from foldgate.store.grants.base import GrantCipher

__all__ = ["SealedSecrets", "migrate_secrets"]

_PREFIX: Final = "SECRET#"
_SK: Final = "SECRET"


def _context(name: str) -> str:
    return json.dumps(["secret", name])


class SealedSecrets:
    """Sealed secrets by full name on one table; ``client`` is a DynamoDB client (lazy)."""

    def __init__(self, table_name: str, cipher: GrantCipher, client: Any | None = None) -> None:
        self.table_name = table_name
        self.cipher = cipher
        self._client = client

    @property
    def client(self) -> Any:
        """The process's DynamoDB client, made on first use."""
        if self._client is None:
            # Loaded on first use: only instances that read a sealed secret pay for boto3.
            from foldgate.store.connections import dynamodb_client

            self._client = dynamodb_client()
        return self._client

    def get(self, name: str) -> str | None:
        """The opened value, None when no item holds ``name``; StoreError when it cannot be opened."""
        item = self.client.get_item(
            TableName=self.table_name,
            Key={"pk": {"S": _PREFIX + name}, "sk": {"S": _SK}},
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            return None
        sealed = item.get("sealed", {}).get("B")
        if not isinstance(sealed, bytes | bytearray):
            raise StoreError(f"secret {name}: the stored item holds no sealed value")
        return self.cipher.decrypt(bytes(sealed), context=_context(name)).decode("utf-8")

    def put(self, name: str, value: str) -> None:
        """Seal and store ``value`` under ``name`` (one KMS GenerateDataKey, one PutItem)."""
        sealed = self.cipher.encrypt(value.encode("utf-8"), context=_context(name))
        self.client.put_item(
            TableName=self.table_name,
            Item={"pk": {"S": _PREFIX + name}, "sk": {"S": _SK}, "sealed": {"B": sealed}},
        )


def migrate_secrets(
    ssm: Any,
    sealed: SealedSecrets,
    prefix: str,
    *,
    tenants: Collection[str] | None = None,
    dry_run: bool = False,
    delete: bool = False,
) -> dict[str, str]:
    """Move the tenants' SecureString secrets (``{prefix}/tenants/<t>/secrets/...``) into the table:
    what happened to each, by name (``moved``, ``unchanged``, ``would move``; ``, parameter deleted``
    with ``delete``). Values are compared in constant time and never returned, printed or logged."""
    base = f"{prefix.rstrip('/')}/tenants/"
    outcomes: dict[str, str] = {}
    pages = ssm.get_paginator("get_parameters_by_path").paginate(
        Path=base, Recursive=True, WithDecryption=True
    )
    for page in pages:
        for param in page.get("Parameters", []):
            name = str(param.get("Name", ""))
            tenant, _, rest = name[len(base) :].partition("/")
            if param.get("Type") != "SecureString" or not rest.startswith("secrets/"):
                continue
            if tenants is not None and tenant not in tenants:
                continue
            value = str(param.get("Value", ""))
            held = sealed.get(name)
            same = held is not None and hmac.compare_digest(held.encode("utf-8"), value.encode("utf-8"))
            if dry_run:
                outcomes[name] = "unchanged" if same else "would move"
                continue
            if not same:
                sealed.put(name, value)
            outcome = "unchanged" if same else "moved"
            if delete:
                ssm.delete_parameter(Name=name)
                outcome += ", parameter deleted"
            outcomes[name] = outcome
    return outcomes
