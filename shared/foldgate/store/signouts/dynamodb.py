"""Signed-out console sessions on the DynamoDB table: one item ``SIGNOUT#{sid}`` / ``SIGNOUT`` per
session, whose ``expires_at`` (the table's TTL attribute) is the session's own expiry, so DynamoDB
deletes it once the cookie is dead anyway. TTL deletion lags, so reads compare ``expires_at`` too.

The MCP function may update items only under ``SIGNOUT#`` for this (IAM ``dynamodb:LeadingKeys``,
template.yaml ``ConsoleSignOut``); it reads them with the table-wide GetItem it has for catalogs.
"""

from __future__ import annotations

import math
import time
from typing import Any, Final

from foldgate.errors import StoreError
from foldgate.store.connections import aws_errors, dynamodb_client
from foldgate.store.signouts.base import SignOutStore

__all__ = ["SIGNOUT_PREFIX", "DynamoSignOutStore"]

SIGNOUT_PREFIX: Final = "SIGNOUT#"
_SK: Final = "SIGNOUT"


def _key(sid: str) -> dict[str, Any]:
    return {"pk": {"S": f"{SIGNOUT_PREFIX}{sid}"}, "sk": {"S": _SK}}


class DynamoSignOutStore(SignOutStore):
    """Sign-outs on the catalog table; ``client`` is a low-level dynamodb client (lazily made)."""

    def __init__(self, table_name: str, *, client: Any | None = None) -> None:
        self.table_name = table_name
        self.client = client if client is not None else dynamodb_client()
        self._errors = aws_errors()

    def sign_out(self, sid: str, until: float) -> None:
        """One conditional UpdateItem: a repeat never moves the expiry earlier."""
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=_key(sid),
                UpdateExpression="SET #e = :u",
                ConditionExpression="attribute_not_exists(#e) OR #e < :u",
                # Through a placeholder: DynamoDB reserves hundreds of plain words.
                ExpressionAttributeNames={"#e": "expires_at"},
                ExpressionAttributeValues={":u": {"N": str(math.ceil(until))}},
            )
        except self._errors as exc:
            if getattr(exc, "response", {}).get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return  # already recorded until then or later
            raise StoreError(f"cannot record a console sign-out: {exc}") from exc

    def signed_out(self, sid: str) -> bool:
        """One strongly consistent GetItem: a sign-out on one instance holds on the next request to any."""
        try:
            resp = self.client.get_item(
                TableName=self.table_name,
                Key=_key(sid),
                ConsistentRead=True,
                ProjectionExpression="expires_at",
            )
        except self._errors as exc:
            raise StoreError(f"cannot read console sign-outs: {exc}") from exc
        item = resp.get("Item")
        if item is None:
            return False
        try:
            return float(item["expires_at"]["N"]) > time.time()
        except (KeyError, TypeError, ValueError):
            # A record without a readable expiry still says the session was ended: refuse it.
            return True
