"""DynamoDB catalog store: immutable chunked versions, a small manifest per version, one pointer per tenant.

One table with generic ``pk``/``sk`` string keys (template.yaml ``CatalogTable``; docs/dynamodb.md):

* pointer ``TENANT#{tenant}`` / ``CURRENT``: version, chunks, bytes, sha256, updated_at;
* manifest ``TENANT#{tenant}`` / ``MANIFEST#{version}``: chunks, bytes, sha256, created_at, state
  (``writing`` -> ``pending`` -> ``current``);
* chunks ``TENANT#{tenant}`` / ``VERSION#{version}#{i:04d}``: ``data`` is a slice of :func:`encode_catalog`.

The flip is one transaction over two small items (the pointer and the manifest), whatever the catalog
size. Chunks are written without a TTL; a sweep after each flip gives whole versions that are no longer
needed (the superseded one, orphans of crashed or losing indexers) the TTL attribute ``expires_at``.
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from typing import Any

from foldgate.errors import ConfigError, ConflictError, StoreError
from foldgate.model.catalog import CatalogVersion
from foldgate.store.catalog.base import CatalogStore, decode_catalog, encode_catalog
from foldgate.store.connections import dynamodb_client, paginate

__all__ = ["DynamoStore"]

log = logging.getLogger(__name__)

_BATCH_ITEMS = 25  # BatchWriteItem's limit per call
# An item is at most 400 KB including attribute names and key values.
_MAX_CHUNK_BYTES = 390_000
_WRITING, _PENDING, _CURRENT = "writing", "pending", "current"
# A manifest a sweep marked for expiry (its chunks may follow) is never made pending or current again.
_UNMARKED = "attribute_exists(pk) AND attribute_not_exists(expires_at)"


def _pk(tenant: str) -> dict[str, str]:
    return {"S": f"TENANT#{tenant}"}


def _chunk_prefix(version: str) -> str:
    # The trailing '#' keeps version "v1" from matching the chunks of "v10".
    return f"VERSION#{version}#"


def _chunk_key(tenant: str, version: str, index: int) -> dict[str, Any]:
    return {"pk": _pk(tenant), "sk": {"S": f"{_chunk_prefix(version)}{index:04d}"}}


def _manifest_key(tenant: str, version: str) -> dict[str, Any]:
    return {"pk": _pk(tenant), "sk": {"S": f"MANIFEST#{version}"}}


def _expired(item: dict[str, Any], now: float) -> bool:
    return "expires_at" in item and float(item["expires_at"]["N"]) < now


def _code(exc: Exception) -> str | None:
    """The AWS error code of a botocore ClientError (None for transport errors)."""
    # A transport error may carry ``response = None`` (botocore's read timeouts do).
    code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code")
    return None if code is None else str(code)


def _describe(exc: Exception) -> str:
    """A one-line reason from a botocore error (ClientError carries a code and a message)."""
    code = _code(exc)
    if code:
        message = (getattr(exc, "response", None) or {}).get("Error", {}).get("Message", "")
        return f"{code}: {message}" if message else code
    return str(exc) or type(exc).__name__


class DynamoStore(CatalogStore):
    """Catalog store on one DynamoDB table; safe to share between threads (boto3 clients are).

    ``client`` is a low-level ``dynamodb`` client (the default honours ``AWS_ENDPOINT_URL_DYNAMODB``).
    ``chunk_bytes`` bounds the compressed bytes per item, ``pending_seconds`` is how old an unflipped
    version must be before a sweep treats it as an orphan, ``grace_seconds`` how long a version marked
    for expiry stays readable.
    """

    # Bounded retry of UnprocessedItems (throttling inside a batch): exponential backoff, full jitter.
    batch_attempts = 8
    backoff_base = 0.05
    backoff_cap = 2.0

    def __init__(
        self,
        table_name: str,
        *,
        client: Any | None = None,
        chunk_bytes: int = 350_000,
        grace_seconds: int = 3600,
        pending_seconds: int = 86400,
    ) -> None:
        # Imported here, not at module import: boto3 plus a client cost ~0.3 s of cold start (measured),
        # paid only by instances that really talk to DynamoDB.
        from botocore.exceptions import BotoCoreError, ClientError

        if not 1 <= chunk_bytes <= _MAX_CHUNK_BYTES:
            raise ConfigError(f"chunk_bytes must be between 1 and {_MAX_CHUNK_BYTES}, got {chunk_bytes}")
        self.table_name = table_name
        self.client: Any = client if client is not None else dynamodb_client()
        self.chunk_bytes = chunk_bytes
        self.grace_seconds = grace_seconds
        self.pending_seconds = pending_seconds
        self._client_error: type[Exception] = ClientError
        self._aws_errors: tuple[type[Exception], ...] = (ClientError, BotoCoreError)

    # -- reads ------------------------------------------------------------------------------------

    def current_version(self, tenant: str) -> str | None:
        """The id of the tenant's current version: one strongly consistent GetItem of the pointer."""
        try:
            resp = self.client.get_item(
                TableName=self.table_name,
                Key={"pk": _pk(tenant), "sk": {"S": "CURRENT"}},
                ConsistentRead=True,
                ProjectionExpression="#v",
                ExpressionAttributeNames={"#v": "version"},
            )
        except self._aws_errors as exc:
            raise StoreError(f"cannot read the current catalog of {tenant!r}: {_describe(exc)}") from exc
        item = resp.get("Item")
        return None if item is None else str(item["version"]["S"])

    def load_version(self, tenant: str, version: str) -> CatalogVersion | None:
        """A stored version; None if absent, incomplete or expired (TTL deletion lags by up to days)."""
        where = f"{tenant!r}/{version}"
        try:
            resp = self.client.get_item(
                TableName=self.table_name, Key=_manifest_key(tenant, version), ConsistentRead=True
            )
        except self._aws_errors as exc:
            raise StoreError(f"cannot read catalog {where}: {_describe(exc)}") from exc
        manifest = resp.get("Item")
        now = time.time()
        if manifest is None:
            return None
        try:
            if _expired(manifest, now) or manifest["state"]["S"] == _WRITING:  # unfinished: no catalog
                return None
            count, size = int(manifest["chunks"]["N"]), int(manifest["bytes"]["N"])
            digest = str(manifest["sha256"]["S"])
        except (KeyError, ValueError, TypeError) as exc:
            raise StoreError(f"stored catalog {where} is corrupt: bad manifest attribute {exc}") from exc
        items = self._query_all(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": _pk(tenant), ":prefix": {"S": _chunk_prefix(version)}},
            ConsistentRead=True,
        )
        if [it["sk"] for it in items] != [_chunk_key(tenant, version, i)["sk"] for i in range(count)]:
            log.warning("catalog %s has %d of its %d chunks; ignoring it", where, len(items), count)
            return None
        try:
            if any(_expired(it, now) for it in items):
                return None
            blob = b"".join(bytes(it["data"]["B"]) for it in items)
        except (KeyError, ValueError, TypeError) as exc:
            raise StoreError(f"stored catalog {where} is corrupt: bad chunk attribute {exc}") from exc
        if len(blob) != size or hashlib.sha256(blob).hexdigest() != digest:
            raise StoreError(f"stored catalog {where} is corrupt: size or sha256 does not match")
        return decode_catalog(blob)

    def has_version(self, tenant: str, version: str) -> bool:
        """Whether the version's manifest is there, finished and not marked expired: one GetItem of that
        small item, never of the chunks (a sweep marks the manifest before its chunks, so an expiring
        version shows here; a chunk lost on its own is found by the next full load)."""
        try:
            resp = self.client.get_item(
                TableName=self.table_name,
                Key=_manifest_key(tenant, version),
                ConsistentRead=True,
                ProjectionExpression="#s, expires_at",
                ExpressionAttributeNames={"#s": "state"},
            )
        except self._aws_errors as exc:
            where = f"{tenant!r}/{version}"
            raise StoreError(f"cannot read catalog {where}: {_describe(exc)}") from exc
        manifest = resp.get("Item")
        if manifest is None or _expired(manifest, time.time()):
            return False
        return manifest.get("state", {}).get("S") in (_PENDING, _CURRENT)

    def tenants(self) -> list[str]:
        """Tenants that have a current version.

        Admin-only: a Scan reads the whole table (chunks included) to find the pointer items.
        """
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "FilterExpression": "sk = :current",
            "ProjectionExpression": "pk",
            "ExpressionAttributeValues": {":current": {"S": "CURRENT"}},
        }
        try:
            items = paginate(self.client.scan, **kwargs)
        except self._aws_errors as exc:
            raise StoreError(f"cannot list tenants: {_describe(exc)}") from exc
        return sorted(str(it["pk"]["S"]).removeprefix("TENANT#") for it in items)

    # -- publish ----------------------------------------------------------------------------------

    def publish(self, catalog: CatalogVersion, *, expected_current: str | None) -> None:
        """Write the chunks and the manifest, flip pointer + manifest in one transaction, then sweep.

        Raises ConflictError when the pointer no longer equals ``expected_current`` (another indexer
        won); the losing version is then marked for expiry (best effort).
        """
        tenant, version = catalog.tenant, catalog.version
        # Checked first, before any write: it saves writing a doomed version, and a retried publish of a
        # version that is already current must not rewrite its manifest back to pending.
        current = self.current_version(tenant)
        if current == version:
            return
        if current != expected_current:
            raise self._conflict(tenant, current, expected_current)
        blob = encode_catalog(catalog)
        chunks = [blob[i : i + self.chunk_bytes] for i in range(0, len(blob), self.chunk_bytes)]
        digest = hashlib.sha256(blob).hexdigest()
        stats = {"chunks": {"N": str(len(chunks))}, "bytes": {"N": str(len(blob))}, "sha256": {"S": digest}}
        # A "writing" manifest first (1 WCU) so a writer that dies among its chunks leaves something a
        # sweep can find; the "pending" one after the chunks is the proof that they were all written.
        self._put_manifest(tenant, version, _WRITING, stats)
        self._write_chunks(tenant, version, chunks)
        self._put_manifest(tenant, version, _PENDING, stats)
        pointer = {"pk": _pk(tenant), "sk": {"S": "CURRENT"}, "version": {"S": version}, **stats}
        pointer["updated_at"] = {"N": str(int(time.time()))}
        try:
            self._flip(tenant, version, pointer, expected_current)
        except ConflictError:
            self._mark(tenant, version, _PENDING)  # it can never become current now
            raise
        self._sweep(tenant, version)

    def _put_manifest(self, tenant: str, version: str, state: str, stats: dict[str, Any]) -> None:
        item = {**_manifest_key(tenant, version), "state": {"S": state}, **stats}
        item["created_at"] = {"N": str(int(time.time()))}
        cond = {"ConditionExpression": _UNMARKED} if state == _PENDING else {}
        try:
            self.client.put_item(TableName=self.table_name, Item=item, **cond)
        except self._aws_errors as exc:
            raise StoreError(f"cannot write catalog {version} of {tenant!r}: {_describe(exc)}") from exc

    def _write_chunks(self, tenant: str, version: str, chunks: list[bytes]) -> None:
        """BatchWriteItem in 25s; UnprocessedItems (throttling) are retried a bounded number of times."""
        items = [{**_chunk_key(tenant, version, i), "data": {"B": data}} for i, data in enumerate(chunks)]
        for start in range(0, len(items), _BATCH_ITEMS):
            batch = [{"PutRequest": {"Item": it}} for it in items[start : start + _BATCH_ITEMS]]
            attempt = 0
            while batch:
                try:
                    resp = self.client.batch_write_item(RequestItems={self.table_name: batch})
                except self._aws_errors as exc:
                    # boto3's standard retry mode already retried throttling errors before this.
                    raise StoreError(
                        f"cannot write catalog {version} of {tenant!r}: {_describe(exc)}"
                    ) from exc
                batch = resp.get("UnprocessedItems", {}).get(self.table_name, [])
                if not batch:
                    break
                attempt += 1
                if attempt >= self.batch_attempts:
                    raise StoreError(
                        f"cannot write catalog {version} of {tenant!r}: DynamoDB left {len(batch)} "
                        f"chunk(s) unprocessed after {attempt} attempts (throttled)"
                    )
                time.sleep(random.uniform(0, min(self.backoff_cap, self.backoff_base * 2**attempt)))

    def _flip(self, tenant: str, version: str, pointer: dict[str, Any], expected: str | None) -> None:
        """One transaction of two small items: compare-and-set the pointer, mark the manifest current."""
        put: dict[str, Any] = {
            "TableName": self.table_name,
            "Item": pointer,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",  # names the winner in the conflict error
        }
        if expected is None:
            put["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            put["ConditionExpression"] = "#v = :expected"
            put["ExpressionAttributeNames"] = {"#v": "version"}
            put["ExpressionAttributeValues"] = {":expected": {"S": expected}}
        update = {
            "TableName": self.table_name,
            "Key": _manifest_key(tenant, version),
            "UpdateExpression": "SET #s = :current",
            "ConditionExpression": _UNMARKED,
            "ExpressionAttributeNames": {"#s": "state"},
            "ExpressionAttributeValues": {":current": {"S": _CURRENT}},
        }
        try:
            self.client.transact_write_items(TransactItems=[{"Put": put}, {"Update": update}])
        except self._client_error as exc:
            response: dict[str, Any] = getattr(exc, "response", {})
            if _code(exc) == "TransactionCanceledException":
                reasons = response.get("CancellationReasons") or [{}]
                codes = [r.get("Code") for r in reasons]
                if codes[0] == "ConditionalCheckFailed":
                    winner = reasons[0].get("Item", {}).get("version", {}).get("S")
                    if winner is None:
                        winner = self._current_or_none(tenant)
                    if winner == version:  # our own earlier attempt already committed
                        return
                    raise self._conflict(tenant, winner, expected) from exc
                if "TransactionConflict" in codes:  # another writer was flipping the same items
                    raise ConflictError(
                        f"tenant {tenant!r} was being published concurrently while indexing from {expected}"
                    ) from exc
                if codes[1:2] == ["ConditionalCheckFailed"]:
                    raise StoreError(
                        f"cannot make {version} current for {tenant!r}: its manifest vanished or was "
                        f"marked for expiry before the flip (written more than {self.pending_seconds}s ago?)"
                    ) from exc
            raise StoreError(f"cannot make {version} current for {tenant!r}: {_describe(exc)}") from exc
        except self._aws_errors as exc:
            raise StoreError(f"cannot make {version} current for {tenant!r}: {_describe(exc)}") from exc

    # -- expiry -----------------------------------------------------------------------------------

    def _sweep(self, tenant: str, version: str) -> None:
        """Best effort after a flip: mark the superseded version and old orphans for expiry.

        Reads only the small manifests. The pointer is read *after* them: a manifest seen ``current``
        that is not the pointer was flipped and then superseded, never the version being served.
        """
        now = time.time()
        try:
            manifests = self._query_all(
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues={":pk": _pk(tenant), ":prefix": {"S": "MANIFEST#"}},
                ProjectionExpression="sk, #s, created_at, expires_at",
                ExpressionAttributeNames={"#s": "state"},
                ConsistentRead=True,
            )
            serving = self.current_version(tenant)
            for item in manifests:
                other, state = str(item["sk"]["S"]).removeprefix("MANIFEST#"), str(item["state"]["S"])
                if other in (version, serving) or "expires_at" in item:
                    continue
                orphan = state != _CURRENT and float(item["created_at"]["N"]) < now - self.pending_seconds
                if state == _CURRENT or orphan:
                    self._mark(tenant, other, state)
        except (StoreError, KeyError, ValueError) as exc:
            log.warning("tenant %r: sweep of old catalog versions stopped: %s", tenant, exc)

    def _mark(self, tenant: str, version: str, state: str) -> None:
        """Best effort: ``expires_at = now + grace`` on the manifest (if unmarked and still in ``state``),
        then on each of its chunks. Readers ignore the version once that time has passed."""
        expires = str(int(time.time()) + self.grace_seconds)
        try:
            old = self._set_expiry(_manifest_key(tenant, version), expires, state)
            if old is None:  # someone else marked it, or it moved on: not ours to expire
                return
            for i in range(int(old["chunks"]["N"])):
                self._set_expiry(_chunk_key(tenant, version, i), expires)
        except (StoreError, KeyError, ValueError) as exc:
            # Harmless: the version is not current; it lingers until a later sweep or a hand clean-up.
            log.warning("catalog %r/%s not (fully) marked for expiry: %s", tenant, version, exc)

    def _set_expiry(
        self, key: dict[str, Any], expires: str, state: str | None = None
    ) -> dict[str, Any] | None:
        """SET expires_at on an existing item (never recreate one TTL took or a dead writer never wrote);
        with ``state``, only on an unmarked manifest in that state. The old item; None if not updated."""
        cond, names, values = "attribute_exists(pk)", {"#e": "expires_at"}, {":t": {"N": expires}}
        if state is not None:
            cond += " AND attribute_not_exists(#e) AND #s = :s"
            names["#s"], values[":s"] = "state", {"S": state}
        try:
            resp = self.client.update_item(
                TableName=self.table_name,
                Key=key,
                UpdateExpression="SET #e = :t",
                ConditionExpression=cond,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="NONE" if state is None else "ALL_OLD",  # never echo a chunk's data back
            )
        except self._aws_errors as exc:
            if _code(exc) == "ConditionalCheckFailedException":
                return None
            raise StoreError(_describe(exc)) from exc
        old: dict[str, Any] = resp.get("Attributes", {})
        return old

    # -- helpers ----------------------------------------------------------------------------------

    def _query_all(self, **kwargs: Any) -> list[dict[str, Any]]:
        """Every item of a Query, following pagination (1 MB pages: ~2 chunks each)."""
        try:
            return paginate(self.client.query, TableName=self.table_name, **kwargs)
        except self._aws_errors as exc:
            raise StoreError(f"cannot read from table {self.table_name}: {_describe(exc)}") from exc

    def _current_or_none(self, tenant: str) -> str | None:
        try:
            return self.current_version(tenant)
        except StoreError:
            return None

    @staticmethod
    def _conflict(tenant: str, current: str | None, expected: str | None) -> ConflictError:
        return ConflictError(f"tenant {tenant!r} moved to {current} while indexing from {expected}")
