"""Agent tokens on the single DynamoDB table (template.yaml ``CatalogTable``; docs/dynamodb.md).

One item per token: ``pk = TOKEN#{token_id}``, ``sk = TOKEN``, with ``digest``, ``tenant``,
``servers`` (a list; absent = every server), ``tier``, ``valid_until`` (absent = never), ``label``,
``created_at``, ``revoked``, ``revoked_at`` and ``last_used_at`` (absent: never used; written at most
once a minute per instance, see foldgate.auth.authority). A token with an expiry also carries the
table's TTL attribute ``expires_at`` one day after it, so DynamoDB deletes dead tokens by itself; the
day of grace keeps an expired token listable for a while (and TTL deletion lags anyway, which is why
the expiry that counts is ``valid_until``, checked on every verification, never the TTL).
"""

from __future__ import annotations

import math
import time
from typing import Any, Final

from foldgate.errors import ConflictError, StoreError
from foldgate.model.agent_token import AgentToken
from foldgate.store.connections import aws_errors, dynamodb_client, paginate
from foldgate.store.tokens.base import TokenStore, decode_tier

__all__ = ["DynamoTokenStore"]

_SK: Final = "TOKEN"
_TTL_GRACE_SECONDS: Final = 86400
# Every attribute but the digest: listing never moves digests over the wire.
_PUBLIC = (
    "token_id", "tenant", "servers", "tier", "valid_until", "label", "created_at", "revoked", "last_used_at",
)  # fmt: skip


def _key(token_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"TOKEN#{token_id}"}, "sk": {"S": _SK}}


def _num(value: float) -> dict[str, str]:
    return {"N": repr(float(value))}


def _code(exc: Exception) -> str | None:
    """The AWS error code of a botocore ClientError (None for transport errors)."""
    code = getattr(exc, "response", {}).get("Error", {}).get("Code")
    return None if code is None else str(code)


def _describe(exc: Exception) -> str:
    code = _code(exc)
    return code if code else (str(exc) or type(exc).__name__)


def _item_token(item: dict[str, Any]) -> AgentToken:
    try:
        servers = item.get("servers")
        until, label, used = item.get("valid_until"), item.get("label"), item.get("last_used_at")
        return AgentToken(
            token_id=str(item["token_id"]["S"]),
            tenant=str(item["tenant"]["S"]),
            servers=None if servers is None else tuple(str(s["S"]) for s in servers["L"]),
            tier=decode_tier(item["tier"]["S"]),
            expires_at=None if until is None else float(until["N"]),
            label=None if label is None else str(label["S"]),
            created_at=float(item["created_at"]["N"]),
            revoked=bool(item["revoked"]["BOOL"]),
            last_used_at=None if used is None else float(used["N"]),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise StoreError(f"stored token is corrupt: bad attribute {exc}") from exc


class DynamoTokenStore(TokenStore):
    """Token store on the catalog table; ``client`` is a low-level ``dynamodb`` client (lazily made)."""

    def __init__(self, table_name: str, *, client: Any | None = None) -> None:
        self.table_name = table_name
        self.client: Any = client if client is not None else dynamodb_client()
        self._errors = aws_errors()

    def put(self, token: AgentToken, digest: str) -> None:
        """One conditional PutItem: an existing id is a ConflictError, never an overwrite."""
        item: dict[str, Any] = {
            **_key(token.token_id),
            "token_id": {"S": token.token_id},
            "digest": {"S": digest},
            "tenant": {"S": token.tenant},
            "tier": {"S": token.tier},
            "created_at": _num(token.created_at),
            "revoked": {"BOOL": token.revoked},
        }
        if token.servers is not None:
            item["servers"] = {"L": [{"S": s} for s in token.servers]}
        if token.expires_at is not None:
            item["valid_until"] = _num(token.expires_at)
            item["expires_at"] = {"N": str(math.ceil(token.expires_at) + _TTL_GRACE_SECONDS)}
        if token.label is not None:
            item["label"] = {"S": token.label}
        if token.last_used_at is not None:
            item["last_used_at"] = _num(token.last_used_at)
        try:
            self.client.put_item(
                TableName=self.table_name, Item=item, ConditionExpression="attribute_not_exists(pk)"
            )
        except self._errors as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                raise ConflictError(f"token id {token.token_id} is already taken") from exc
            raise StoreError(f"cannot store token {token.token_id}: {_describe(exc)}") from exc

    def get(self, token_id: str) -> tuple[AgentToken, str] | None:
        """One strongly consistent GetItem, so a revocation is seen by the next uncached verification."""
        try:
            resp = self.client.get_item(TableName=self.table_name, Key=_key(token_id), ConsistentRead=True)
        except self._errors as exc:
            raise StoreError(f"cannot read token {token_id}: {_describe(exc)}") from exc
        item = resp.get("Item")
        if item is None:
            return None
        token = _item_token(item)
        try:
            digest = str(item["digest"]["S"])
        except (KeyError, TypeError) as exc:
            raise StoreError(f"stored token {token_id} is corrupt: no digest") from exc
        return token, digest

    def list(self, tenant: str | None = None) -> list[AgentToken]:
        """Tokens (of one tenant), oldest first.

        Admin-only (the CLI, never a request): a Scan reads the whole table, catalog chunks included,
        and filters on ``sk``; a GSI would be needed before this serves a hot path.
        """
        names = {f"#{a}": a for a in _PUBLIC} | {"#sk": "sk"}
        values: dict[str, Any] = {":sk": {"S": _SK}}
        where = "#sk = :sk"
        if tenant is not None:
            where += " AND #tenant = :tenant"
            values[":tenant"] = {"S": tenant}
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "FilterExpression": where,
            "ProjectionExpression": ", ".join(f"#{a}" for a in _PUBLIC),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        try:
            found = [_item_token(it) for it in paginate(self.client.scan, **kwargs)]
        except self._errors as exc:
            raise StoreError(f"cannot list tokens: {_describe(exc)}") from exc
        return sorted(found, key=lambda t: (t.created_at, t.token_id))

    def revoke(self, token_id: str) -> bool:
        """One conditional UpdateItem (the item must exist: no stub is created for an unknown id)."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=_key(token_id),
                UpdateExpression="SET #r = :yes, #ra = if_not_exists(#ra, :now)",
                ConditionExpression="attribute_exists(pk)",
                # Names through placeholders: DynamoDB reserves hundreds of plain words.
                ExpressionAttributeNames={"#r": "revoked", "#ra": "revoked_at"},
                ExpressionAttributeValues={":yes": {"BOOL": True}, ":now": _num(time.time())},
            )
        except self._errors as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                return False
            raise StoreError(f"cannot revoke token {token_id}: {_describe(exc)}") from exc
        return True

    def touch(self, token_id: str, at: float) -> None:
        """One conditional UpdateItem: the item must exist and not record a later use already (two
        instances touching at once keep the later time); a failed condition is not an error."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=_key(token_id),
                UpdateExpression="SET #u = :at",
                ConditionExpression="attribute_exists(pk) AND (attribute_not_exists(#u) OR #u < :at)",
                ExpressionAttributeNames={"#u": "last_used_at"},
                ExpressionAttributeValues={":at": _num(at)},
            )
        except self._errors as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                return
            raise StoreError(f"cannot record the use of token {token_id}: {_describe(exc)}") from exc
