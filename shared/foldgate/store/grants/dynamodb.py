"""Upstream grants on the single DynamoDB table (template.yaml ``CatalogTable``; docs/dynamodb.md).

- grant: ``pk = UPGRANT#{tenant}``, ``sk = GRANT#{server}#{subject}``; ``sealed`` (B), ``version``,
  ``state``, ``token_expires_at``, ``scope``, ``updated_at``, ``tenant``, ``server``, ``subject``;
- client: ``pk = UPGRANT#{tenant}``, ``sk = CLIENT#{server}#{issuer}``; ``sealed`` (B), ``client_id``
  and ``claimed_at`` (the re-registration's conditional writes; PutItems, the roles' only write);
- tenant key: ``pk = UPGRANT#{tenant}``, ``sk = KEY#{name}``; ``sealed`` (B): its DPoP key, put once
  under ``attribute_not_exists(pk)`` (instances racing to make the first one share the winner's);
- pending consent: ``pk = UPPENDING#{sha256(state)}``, ``sk = PENDING``; ``sealed`` (B) and the
  table's TTL attribute ``expires_at``;
- used connect link: ``pk = UPPENDING#{sha256("link" 0x1f nonce)}``, ``sk = USEDLINK``; only the TTL
  attribute ``expires_at`` (the partition the roles may already write: no IAM change).

A tenant's grants are one Query (of one server: ``begins_with`` on ``GRANT#{server}#``; server names
hold no ``#``, so ``a`` never matches ``a-b``). The access token's expiry is ``token_expires_at``, never
``expires_at``: that is the table's TTL attribute, and DynamoDB would delete a grant whose access token
merely expired, refresh token and all. Pending consents do carry ``expires_at``, so abandoned ones go by
themselves; TTL deletion lags (up to days), so the sealed expiry is checked on every take as well.

The conditional write is a PutItem under ``version = :read`` (``attribute_not_exists(pk)`` for a first
grant), the single-use take a DeleteItem returning the old item: both atomic on the item, so they hold
across every warm instance.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Final

from foldgate.errors import ConflictError, StoreError
from foldgate.store.connections import aws_errors, dynamodb_client, paginate
from foldgate.store.grants.base import (
    ClientRegistration,
    GrantCipher,
    GrantStore,
    GrantSummary,
    PendingConsent,
    UpstreamGrant,
)
from foldgate.store.grants.codec import (
    decode_state,
    link_key,
    open_client,
    open_grant,
    open_key,
    open_pending,
    pending_key,
    seal_client,
    seal_grant,
    seal_key,
    seal_pending,
    stamped,
)

__all__ = ["GRANT_PREFIX", "PENDING_PREFIX", "DynamoGrantStore"]

# The partitions this store writes; template.yaml's IAM conditions name the same ones.
GRANT_PREFIX: Final = "UPGRANT#"
PENDING_PREFIX: Final = "UPPENDING#"
_PENDING_SK: Final = "PENDING"
_LINK_SK: Final = "USEDLINK"
_SUMMARY = ("server", "subject", "state", "token_expires_at", "scope", "updated_at", "reason")
# The stored client is still the one read (an item stored before client_id was kept has none).
_SAME_CLIENT: Final = "(attribute_not_exists(client_id) OR client_id = :id)"


def _checked(name: str, value: str) -> str:
    # Tenant and server names are validated upstream to hold no '#'; a key built from one that does
    # could reach another server's items, so it is refused here too.
    if not value or "#" in value:
        raise StoreError(f"{name} {value!r} cannot address a grant")
    return value


def _grant_key(tenant: str, server: str, subject: str) -> dict[str, Any]:
    return {
        "pk": {"S": f"{GRANT_PREFIX}{_checked('tenant', tenant)}"},
        "sk": {"S": f"GRANT#{_checked('server', server)}#{subject}"},
    }


def _code(exc: Exception) -> str | None:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code")
    return None if code is None else str(code)


def _describe(exc: Exception) -> str:
    return _code(exc) or str(exc) or type(exc).__name__


def _num(value: float) -> dict[str, str]:
    return {"N": repr(float(value))}


def _attr(item: dict[str, Any], name: str, kind: str) -> Any:
    try:
        return item[name][kind]
    except (KeyError, TypeError) as exc:
        raise StoreError(f"stored grant item is corrupt: bad attribute {name}") from exc


def _opt(item: dict[str, Any], name: str, kind: str) -> Any:
    return None if name not in item else _attr(item, name, kind)


def _float(text: Any) -> float:
    try:
        return float(text)
    except (TypeError, ValueError) as exc:
        raise StoreError("stored grant item is corrupt: bad number") from exc


class DynamoGrantStore(GrantStore):
    """Grant store on the catalog table; ``client`` is a low-level ``dynamodb`` client (lazily made)."""

    def __init__(
        self,
        table_name: str,
        cipher: GrantCipher,
        *,
        client: Any | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.table_name = table_name
        self.client: Any = client if client is not None else dynamodb_client()
        self._cipher = cipher
        self._clock = clock
        self._errors = aws_errors()

    def get_grant(self, tenant: str, server: str, subject: str) -> UpstreamGrant | None:
        """One strongly consistent GetItem: a refresh must see the latest rotated token."""
        try:
            resp = self.client.get_item(
                TableName=self.table_name, Key=_grant_key(tenant, server, subject), ConsistentRead=True
            )
        except self._errors as exc:
            raise StoreError(f"cannot read the grant of {tenant}/{server}: {_describe(exc)}") from exc
        item = resp.get("Item")
        if item is None:
            return None
        return open_grant(
            self._cipher, bytes(_attr(item, "sealed", "B")), tenant=tenant, server=server, subject=subject,
            state=_attr(item, "state", "S"), updated_at=_float(_attr(item, "updated_at", "N")),
            version=int(_float(_attr(item, "version", "N"))),
        )  # fmt: skip

    def put_grant(self, grant: UpstreamGrant) -> UpstreamGrant | None:
        """One conditional PutItem on the version read; None when another writer got there first."""
        if grant.version < 0:
            raise StoreError(f"grant version {grant.version} is not a stored version")
        now = self._clock()
        item: dict[str, Any] = {
            **_grant_key(grant.tenant, grant.server, grant.subject),
            "tenant": {"S": grant.tenant},
            "server": {"S": grant.server},
            "subject": {"S": grant.subject},
            "state": {"S": grant.state},
            "updated_at": _num(now),
            "version": {"N": str(grant.version + 1)},
            "sealed": {"B": seal_grant(self._cipher, grant)},
        }
        if grant.expires_at is not None:
            item["token_expires_at"] = _num(grant.expires_at)
        if grant.scope is not None:
            item["scope"] = {"S": grant.scope}
        if grant.reason is not None:
            item["reason"] = {"S": grant.reason}
        condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(pk)"}
        if grant.version > 0:
            condition = {
                "ConditionExpression": "#v = :read",
                "ExpressionAttributeNames": {"#v": "version"},
                "ExpressionAttributeValues": {":read": {"N": str(grant.version)}},
            }
        try:
            self.client.put_item(TableName=self.table_name, Item=item, **condition)
        except self._errors as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                return None
            raise StoreError(
                f"cannot store the grant of {grant.tenant}/{grant.server}: {_describe(exc)}"
            ) from exc
        return stamped(grant, version=grant.version + 1, updated_at=now)

    def delete_grant(self, tenant: str, server: str, subject: str) -> bool:
        """One DeleteItem; True if there was a grant."""
        try:
            resp = self.client.delete_item(
                TableName=self.table_name, Key=_grant_key(tenant, server, subject), ReturnValues="ALL_OLD"
            )
        except self._errors as exc:
            raise StoreError(f"cannot delete the grant of {tenant}/{server}: {_describe(exc)}") from exc
        return bool(resp.get("Attributes"))

    def list_grants(self, tenant: str, server: str | None = None) -> list[GrantSummary]:
        """One consistent Query of the tenant's grants, projecting away ``sealed``: no token moves."""
        prefix = "GRANT#" if server is None else f"GRANT#{_checked('server', server)}#"
        try:
            items = paginate(
                self.client.query,
                TableName=self.table_name,
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues={
                    ":pk": {"S": f"{GRANT_PREFIX}{_checked('tenant', tenant)}"},
                    ":prefix": {"S": prefix},
                },
                # Names through placeholders: DynamoDB reserves hundreds of plain words ('state' among them).
                ProjectionExpression=", ".join(f"#{a}" for a in _SUMMARY),
                ExpressionAttributeNames={f"#{a}": a for a in _SUMMARY},
                ConsistentRead=True,
            )
        except self._errors as exc:
            raise StoreError(f"cannot list grants: {_describe(exc)}") from exc
        summaries = []
        for item in items:
            until, scope = _opt(item, "token_expires_at", "N"), _opt(item, "scope", "S")
            reason = _opt(item, "reason", "S")
            summaries.append(
                GrantSummary(
                    tenant=tenant,
                    server=str(_attr(item, "server", "S")),
                    subject=str(_attr(item, "subject", "S")),
                    state=decode_state(_attr(item, "state", "S")),
                    expires_at=None if until is None else _float(until),
                    scope=None if scope is None else str(scope),
                    updated_at=_float(_attr(item, "updated_at", "N")),
                    reason=None if reason is None else str(reason),
                )
            )
        return sorted(summaries, key=lambda s: (s.server, s.subject))

    def _client_key(self, tenant: str, server: str, issuer: str) -> dict[str, Any]:
        return {
            "pk": {"S": f"{GRANT_PREFIX}{_checked('tenant', tenant)}"},
            "sk": {"S": f"CLIENT#{_checked('server', server)}#{issuer}"},
        }

    def get_client(self, tenant: str, server: str, issuer: str) -> ClientRegistration | None:
        """One consistent GetItem of the sealed registration."""
        try:
            resp = self.client.get_item(
                TableName=self.table_name, Key=self._client_key(tenant, server, issuer), ConsistentRead=True
            )
        except self._errors as exc:
            raise StoreError(f"cannot read the client of {tenant}/{server}: {_describe(exc)}") from exc
        item = resp.get("Item")
        if item is None:
            return None
        sealed = bytes(_attr(item, "sealed", "B"))
        claimed = _opt(item, "claimed_at", "N")
        return open_client(
            self._cipher, sealed, tenant=tenant, server=server, issuer=issuer,
            claimed_at=None if claimed is None else _float(claimed),
        )  # fmt: skip

    def _put_client(
        self, client: ClientRegistration, *, claimed_at: float | None = None, **condition: Any
    ) -> bool:
        """One PutItem of the sealed registration; False when ``condition`` did not hold."""
        item = {
            **self._client_key(client.tenant, client.server, client.issuer),
            "sealed": {"B": seal_client(self._cipher, client)},
            "client_id": {"S": client.client_id},
        }
        if claimed_at is not None:
            item["claimed_at"] = _num(claimed_at)
        try:
            self.client.put_item(TableName=self.table_name, Item=item, **condition)
        except self._errors as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                return False
            raise StoreError(
                f"cannot store the client of {client.tenant}/{client.server}: {_describe(exc)}"
            ) from exc
        return True

    def put_client(self, client: ClientRegistration) -> None:
        """One PutItem (overwrites, clearing any claim)."""
        self._put_client(client)

    def replace_client(self, client: ClientRegistration, *, previous: str | None) -> bool:
        """One PutItem conditional on no item (``previous`` None) or on the previous client_id."""
        if previous is None:
            return self._put_client(client, ConditionExpression="attribute_not_exists(pk)")
        return self._put_client(
            client,
            ConditionExpression=f"attribute_exists(pk) AND {_SAME_CLIENT}",
            ExpressionAttributeValues={":id": {"S": previous}},
        )

    def claim_client(self, client: ClientRegistration, *, lease_s: float) -> bool:
        """One PutItem of the same registration with ``claimed_at``, conditional on its client_id and
        on no live claim (a PutItem, not an UpdateItem: the functions' roles may only put)."""
        now = self._clock()
        return self._put_client(
            client,
            claimed_at=now,
            ConditionExpression=(
                f"attribute_exists(pk) AND {_SAME_CLIENT} "
                "AND (attribute_not_exists(claimed_at) OR claimed_at <= :stale)"
            ),
            ExpressionAttributeValues={":id": {"S": client.client_id}, ":stale": _num(now - lease_s)},
        )

    def _key_key(self, tenant: str, name: str) -> dict[str, Any]:
        return {
            "pk": {"S": f"{GRANT_PREFIX}{_checked('tenant', tenant)}"},
            "sk": {"S": f"KEY#{_checked('key name', name)}"},
        }

    def get_key(self, tenant: str, name: str) -> str | None:
        """One consistent GetItem of the sealed key (one stored a moment ago elsewhere shows)."""
        try:
            resp = self.client.get_item(
                TableName=self.table_name, Key=self._key_key(tenant, name), ConsistentRead=True
            )
        except self._errors as exc:
            raise StoreError(f"cannot read the {name} key of {tenant}: {_describe(exc)}") from exc
        item = resp.get("Item")
        if item is None:
            return None
        return open_key(self._cipher, bytes(_attr(item, "sealed", "B")), tenant=tenant, name=name)

    def add_key(self, tenant: str, name: str, pem: str) -> bool:
        """One PutItem under ``attribute_not_exists(pk)``: of any number of instances, one key wins."""
        item = {**self._key_key(tenant, name), "sealed": {"B": seal_key(self._cipher, tenant, name, pem)}}
        return self._put_once(item, f"store the {name} key of {tenant}")

    def _put_once(self, item: dict[str, Any], what: str) -> bool:
        """One PutItem under ``attribute_not_exists(pk)``: False when the key is taken already (of any
        number of instances, one wins); StoreError naming ``what`` on any other failure."""
        try:
            self.client.put_item(
                TableName=self.table_name, Item=item, ConditionExpression="attribute_not_exists(pk)"
            )
        except self._errors as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                return False
            raise StoreError(f"cannot {what}: {_describe(exc)}") from exc
        return True

    def put_pending(self, pending: PendingConsent) -> None:
        """One conditional PutItem (ConflictError if the state is taken), with the TTL attribute."""
        key = pending_key(pending.state)
        item = {
            "pk": {"S": f"{PENDING_PREFIX}{key}"},
            "sk": {"S": _PENDING_SK},
            "expires_at": {"N": str(math.ceil(pending.expires_at))},
            "sealed": {"B": seal_pending(self._cipher, pending)},
        }
        if not self._put_once(item, "store a pending consent"):
            raise ConflictError("a pending consent with this state exists")

    def take_pending(self, state: str) -> PendingConsent | None:
        """One DeleteItem returning the old item: of two racing callbacks only one gets it."""
        try:
            resp = self.client.delete_item(
                TableName=self.table_name,
                Key={"pk": {"S": f"{PENDING_PREFIX}{pending_key(state)}"}, "sk": {"S": _PENDING_SK}},
                ReturnValues="ALL_OLD",
            )
        except self._errors as exc:
            raise StoreError(f"cannot take a pending consent: {_describe(exc)}") from exc
        item = resp.get("Attributes")
        if not item:
            return None
        pending = open_pending(self._cipher, bytes(_attr(item, "sealed", "B")), state=state)
        # TTL deletion lags: the sealed expiry decides.
        return pending if pending.expires_at > self._clock() else None

    def use_link(self, nonce: str, expires_at: float) -> bool:
        """One PutItem under ``attribute_not_exists(pk)``: of any number of instances, one wins."""
        item = {
            "pk": {"S": f"{PENDING_PREFIX}{link_key(nonce)}"},
            "sk": {"S": _LINK_SK},
            "expires_at": {"N": str(math.ceil(expires_at))},
        }
        return self._put_once(item, "mark a connect link used")

    def link_used(self, nonce: str) -> bool:
        """A strongly consistent GetItem (a use on another instance a moment ago shows)."""
        try:
            resp = self.client.get_item(
                TableName=self.table_name,
                Key={"pk": {"S": f"{PENDING_PREFIX}{link_key(nonce)}"}, "sk": {"S": _LINK_SK}},
                ConsistentRead=True,
            )
        except self._errors as exc:
            raise StoreError(f"cannot read a used link: {_describe(exc)}") from exc
        return "Item" in resp
